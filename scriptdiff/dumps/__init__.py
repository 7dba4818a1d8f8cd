"""Process data, second level: two runs' msprobe dumps, matched call by call.

`scriptdiff dumps GPU_DUMP NPU_DUMP` and the `check` verdict "API dumps" (rules/kinds.yaml,
check `dumps`) both end here:

  reader.py  a dump folder (dump/stepN/rankR/ or procPID/: dump.json, stack.json,
             construct.json, dump_tensor_data/) -> ranks; dump.json streamed a call at a
             time (jsonload.Stream), stack.json and construct.json looked up the same way,
             saved tensors through safe loaders only (.npy without pickles, safetensors,
             torch.load(weights_only=True))
  ports.py   the rules data (rules/dumps.yaml): which NPU fused call stands for which GPU
             call or block (npu_fusion_attention, npu_rms_norm, NpuFused* optimizers), what a
             call depends on, which stack frames are the libraries'
  align.py   the two call sequences matched in lockstep within a bounded window: by name,
             order and module path, through the port forms; what has no counterpart is listed
  stats.py   one matched call compared: dtype, shape, NaN/inf, arguments, the relative error
             of Max/Min/Mean/Norm under the thresholds (Settings)
  run.py     both sides compared rank by rank: the first divergence in execution order with
             the chain of calls after it, the findings, the overview, `scriptdiff dumps`
  cause.py   the link back to the setup: the static findings at the diverging call's lines,
             in its function, or on a setting it depends on (the check's `relate` hook)
  check.py   the `check` hooks: measure (one side's dump) and classify (both sides)

numpy is imported inside functions, so importing this package stays cheap.
"""
