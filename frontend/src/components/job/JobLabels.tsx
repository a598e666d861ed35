import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { Link } from "react-router-dom";
import { api, unwrap } from "../../client/api";
import type { Job } from "../../client/types";
import { keys } from "../../hooks/queries";
import { parseTags } from "../../lib/compare";
import "../compare/compare.css";

/** Saves a job's tags and notes (PATCH /api/jobs/{id}/labels); the lists and the job reload. */
export function useLabelJob(id: number) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: { tags: string[]; notes: string }) =>
      unwrap(api.PATCH("/api/jobs/{job_id}/labels", { params: { path: { job_id: id } }, body })),
    onSuccess: (job) => {
      client.setQueryData(keys.job(id), job);
      void client.invalidateQueries({ queryKey: ["jobs"] });
    },
  });
}

/** A job's tags as links to the jobs list filtered by each. */
export function TagChips({ tags }: { tags: readonly string[] }) {
  return (
    <span className="tag-chips">
      {tags.map((t) => (
        <Link key={t} className="tag-chip" to={`/jobs?tag=${encodeURIComponent(t)}`} title={`every job tagged ${t}`}>
          {t}
        </Link>
      ))}
    </span>
  );
}

/**
 * A job's tags and notes, and (for its owner or an admin; others are told why not on saving)
 * a form to change them: tags separated by spaces, notes free text.
 */
export function JobLabels({ job, compact = false }: { job: Job; compact?: boolean }) {
  const [editing, setEditing] = useState(false);
  const [tags, setTags] = useState("");
  const [notes, setNotes] = useState("");
  const save = useLabelJob(job.id);
  const open = () => {
    setTags((job.tags ?? []).join(" "));
    setNotes(job.notes ?? "");
    save.reset();
    setEditing(true);
  };
  if (!editing) {
    return (
      <div className="job-labels" data-testid={`job-labels-${job.id}`}>
        <TagChips tags={job.tags ?? []} />
        {!compact && job.notes && <p className="job-notes small">{job.notes}</p>}
        <button type="button" className="link-button small" onClick={open} aria-label={`edit tags of job ${job.id}`}>
          {(job.tags ?? []).length || job.notes ? "edit" : "+ tag"}
        </button>
      </div>
    );
  }
  return (
    <form
      className="job-labels editing"
      onSubmit={(e) => {
        e.preventDefault();
        save.mutate({ tags: parseTags(tags), notes }, { onSuccess: () => setEditing(false) });
      }}
    >
      <input
        aria-label={`tags of job ${job.id}`}
        placeholder="tags, e.g. baseline lr-sweep"
        value={tags}
        onChange={(e) => setTags(e.target.value)}
        autoFocus
      />
      <textarea
        aria-label={`notes of job ${job.id}`}
        placeholder="notes: why it ran, what it showed"
        value={notes}
        onChange={(e) => setNotes(e.target.value)}
        rows={2}
      />
      <div className="row-actions">
        <button type="submit" className="small" disabled={save.isPending}>
          save
        </button>
        <button type="button" className="link-button small" onClick={() => setEditing(false)}>
          cancel
        </button>
      </div>
      {save.error && (
        <div className="banner error small" role="alert">
          {save.error.message}
        </div>
      )}
    </form>
  );
}
