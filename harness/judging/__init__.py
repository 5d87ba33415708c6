"""Judging: from a case's replicates to its claims' verdicts, in one package.

- ``claims``: what plugin authors write (``Claim``, ``Control``, ``Premise``, ``QualityGuard``) and
  the verdict a claim gets (``ClaimVerdict``);
- ``verdicts``: the rules, knowing nothing of cases or runs (the interval a claim's kind needs,
  pass / fail / inconclusive, ``rejudge`` at another level), over ``intervals`` (t, Welch, Fieller,
  Wilson, bootstrap, Mann-Whitney, power);
- ``case``: the entry points. ``judge_claims`` judges a fresh case of a run against its baseline
  and premises (the run loop, ``harness controls``); ``current_verdicts`` judges a stored record
  again with the claims of the code that reads it (report, check);
- ``baseline_rule`` (which case is a case's baseline), ``multiplicity`` (Holm, BH over a run),
  ``until_decided`` and ``launches`` (more repeats, more launches, looks corrected),
  ``quality`` (when a training reached quality), ``stability`` (the note on unstable timings),
  ``current_claims`` (stored verdicts under today's claims), ``controls`` (each claim's control).

Nothing is imported here, so importing one module of the package does not import the rest.
"""
