"""Data-parallel map jobs: N input items cut into chunks, chunks shared among the ranks by a
strategy, each chunk's output written atomically by index, read back in input order.

- options.py: the user-facing knobs (`MapOptions`), torch-free so the API can validate them
- inputs.py: the input datasets (array rows, JSONL lines, files of a directory)
- plan.py: pure planning (chunks, fallback to fewer ranks, static strategies)
- claim.py: the shared queue of the `dynamic` strategy (a file lock, no extra service)
- batch.py: batch size `auto` from a memory-estimate callback
- output.py: atomic chunk shards, the manifest, `read_output`, consolidation into one file
- runner.py: `run_map(ctx, ...)`, what a kind's `train` calls
"""
