"""What the harness writes, made safe: whole files or none (``atomic``), the results folder and
its lock (``outdir``), text from records and plugins made harmless for each output kind
(``safe_text``), JSON without NaN or Infinity (``strict_json``), figures without a screen
(``plotting``)."""
