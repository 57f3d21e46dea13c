"""Checks an ONNX file written by frugal against frugal's own outputs (tests/compress/onnx_test.cpp).

usage: onnx_check.py MODEL.onnx CASE.json
CASE.json: {"input": "x.f32", "input_shape": [...], "expected": "y.f32", "expected_shape": [...],
            "metadata": {key: value, ...}}   raw little-endian float32 files beside CASE.json
Prints one JSON line {"max_abs_diff": ..., "nodes": ...}; exits 1 on any mismatch.
"""
import json
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort


def main():
    model_path, case_path = sys.argv[1], sys.argv[2]
    case = json.load(open(case_path))
    here = os.path.dirname(case_path)
    x = np.fromfile(os.path.join(here, case["input"]), dtype="<f4").reshape(case["input_shape"])
    want = np.fromfile(os.path.join(here, case["expected"]), dtype="<f4").reshape(case["expected_shape"])

    model = onnx.load(model_path)
    onnx.checker.check_model(model, full_check=True)
    assert model.ir_version == 8, model.ir_version
    opsets = {o.domain: o.version for o in model.opset_import}
    assert opsets.get("", 0) >= 13, opsets
    ops = {n.op_type for n in model.graph.node}
    assert "BatchNormalization" not in ops, "batch norm should be folded into the convolutions"
    (inp,) = model.graph.input
    dims = inp.type.tensor_type.shape.dim
    assert dims[0].dim_param == "batch", dims[0]
    assert [d.dim_value for d in dims[1:]] == list(x.shape[1:]), dims
    props = {p.key: p.value for p in model.metadata_props}
    for key, value in case["metadata"].items():
        assert props.get(key) == value, (key, props.get(key), value)
    for key in ("frugal.mean", "frugal.std", "frugal.preprocessing", "frugal.classes"):
        assert key in props, key

    sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    got = sess.run(None, {inp.name: x})[0]
    assert got.shape == want.shape, (got.shape, want.shape)
    # Outputs near zero would make atol alone pass anything.
    assert float(np.max(np.abs(want))) > 1e-2, "reference outputs too small to compare"
    diff = float(np.max(np.abs(got - want)))
    ok = np.allclose(got, want, rtol=1e-3, atol=1e-4)
    # The batch dimension is dynamic: one sample alone gives the same row.
    one = sess.run(None, {inp.name: x[:1]})[0]
    ok = ok and np.allclose(one, want[:1], rtol=1e-3, atol=1e-4)
    print(json.dumps({"max_abs_diff": diff, "nodes": len(model.graph.node), "ok": bool(ok)}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
