"""Process data: the GPU and NPU training curves, read, aligned, measured and judged.

`scriptdiff curves GPU NPU` and the `check` verdict "process data" (rules/kinds.yaml,
check `process`) both end here:

  readers.py   logs and exports -> a `Run` per side (streamed, bounded memory); each
               file's reader is chosen by its content and says what it recognised
  series.py    `Track` (one metric: steps and values, decimated past a cap), `LineIndex`
               (step -> the file and line of its record, for findings) and `Run`
  align.py     two tracks on one axis: step, or consumed samples/tokens; resampling
  metrics.py   per-series errors, windows, first divergence, NaN/inf/skip/overflow/spikes
  verdict.py   the four kinds of mismatch (Ascend's accuracy guidance), with evidence
  findings.py  the verdict as Findings of check `process` (rules/curves.yaml)
  chart.py     the compact terminal chart (plain unicode, no extra)
  plot.py      --plot PNG/SVG through matplotlib (`pip install 'scriptdiff[plot]'`)
  page.py      the html page's chart data (drawn by the page as SVG) and the markdown section
  check.py     the `check` hooks: measure (one side's logs) and classify (both sides)

numpy is imported inside functions, so importing this package stays cheap.
"""
