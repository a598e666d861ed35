"""The submit pipeline, one for a job and a sweep (`submission`): where the jobs may run, the
checks (`checks`, config errors), the memory estimate, the reservation step (`reserve`);
and the jobs made from others (resume, follow-ups)."""
