"""A job's tags and notes: free text its owner writes on it, to find it by and to say why it
ran. Takes a Session, flushes, never commits."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.orm import Session

from gpudeck.models import Job
from gpudeck.services.errors import InvalidInput

MAX_TAGS = 32  # a job's tags are a handful of words; past this they are notes


def relabel(
    session: Session,
    job: Job,
    *,
    tags: Sequence[str] | None = None,
    add_tags: Sequence[str] = (),
    remove_tags: Sequence[str] = (),
    notes: str | None = None,
) -> Job:
    """Set the tags (`tags` replaces them; `add_tags` and `remove_tags` change them in place, so
    two users adding tags at once keep both), and the notes where given."""
    current = list(job.tags if tags is None else dict.fromkeys(tags))
    current += [t for t in dict.fromkeys(add_tags) if t not in current]
    kept = [t for t in current if t not in set(remove_tags)]
    if len(kept) > MAX_TAGS:
        raise InvalidInput([("tags", f"at most {MAX_TAGS} tags a job; it would have {len(kept)}")])
    job.tags = kept
    if notes is not None:
        job.notes = notes
    session.flush()
    return job
