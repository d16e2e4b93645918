"""`spark hw ...` through the real dispatcher: JSON on stdout, errors on stderr with exit 2."""

import json

import pytest

from tui.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_predict_json(capsys):
    code, out, err = run(capsys, "hw", "predict", "--chip", "h100-sxm", "--model", "llama-3.1-8b",
                         "--batch", "4", "--ctx", "2048", "--prompt", "512", "--json")
    assert code == 0 and not err
    doc = json.loads(out)
    assert doc["batch"] == 4 and doc["ctx"] == 2048 and doc["prompt"] == 512
    for key in ("prefill_ms", "ttft_ms", "decode_step_ms", "tokens_per_s_per_seq", "tokens_per_s_total",
                "weight_gb", "kv_gb", "fits", "chips_needed", "bound"):
        assert key in doc


def test_predict_text(capsys):
    code, out, _ = run(capsys, "hw", "predict", "--chip", "cs-3", "--model", "llama-3.1-8b")
    assert code == 0 and "tokens/s/seq" in out and "TTFT" in out


@pytest.mark.parametrize("argv,match", [
    (["--chip", "tpu", "--model", "llama-3.1-8b"], "unknown chip"),
    (["--chip", "h100", "--model", "gpt-9"], "unknown model"),
    (["--chip", "h100", "--model", "llama-3.1-405b", "--chips", "2"], "does not fit"),
    (["--chip", "h100", "--model", "llama-3.1-8b", "--ctx", "200000"], "exceeds"),
    (["--chip", "h100", "--model", "llama-3.1-8b", "--precision", "fp5"], "precision"),
])
def test_predict_errors_exit_2(capsys, argv, match):
    code, out, err = run(capsys, "hw", "predict", *argv, "--json")
    assert code == 2 and out == "" and match in err


def test_bad_batch_is_rejected_by_argparse(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["hw", "predict", "--chip", "h100", "--model", "llama-3.1-8b", "--batch", "0"])
    assert exc.value.code == 2


def test_chips_and_models_lists(capsys):
    code, out, _ = run(capsys, "hw", "chips", "--json")
    names = {c["name"] for c in json.loads(out)["chips"]}
    assert code == 0 and {"cs-3", "h100-sxm", "h200", "b200", "rtx-3090", "local"} <= names
    code, out, _ = run(capsys, "hw", "models")
    assert code == 0 and "llama-3.1-405b" in out and "qwen3-235b-a22b" in out


def test_sweep_prints_table_and_chart(capsys):
    code, out, _ = run(capsys, "hw", "sweep", "--chip", "h100-sxm", "--model", "llama-3.1-8b",
                       "--over", "batch", "--values", "1,8,64")
    assert code == 0 and "tokens/s total" in out and "█" in out
    code, out, _ = run(capsys, "hw", "sweep", "--chip", "h100-sxm", "--model", "llama-3.1-8b",
                       "--over", "ctx", "--json")
    points = json.loads(out)["points"]
    steps = [p["decode_step_ms"] for p in points]
    assert steps == sorted(steps)


def test_calibrate_writes_file_used_by_predict(capsys, tmp_path):
    measured = tmp_path / "m.jsonl"
    lines = [
        {"chip": "h100-sxm", "model": "llama-3.2-1b", "phase": "decode", "batch": 1, "ctx": 512, "step_ms": 2.4},
        {"chip": "h100-sxm", "model": "llama-3.1-8b", "phase": "decode", "batch": 1, "ctx": 1024, "step_ms": 8.6},
        {"chip": "h100-sxm", "model": "llama-3.2-1b", "phase": "prefill", "batch": 1, "prompt": 2048, "ms": 12.5},
        {"chip": "h100-sxm", "model": "llama-3.1-8b", "phase": "prefill", "batch": 1, "prompt": 2048, "ms": 63.9},
    ]
    measured.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    out_file = tmp_path / "calib.json"
    code, out, err = run(capsys, "hw", "calibrate", str(measured), "-o", str(out_file), "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert "h100-sxm" in doc["chips"] and out_file.is_file()
    code, out, _ = run(capsys, "hw", "predict", "--chip", "h200", "--model", "llama-3.1-8b",
                       "--calibration", str(out_file), "--json")
    assert code == 0 and json.loads(out)["calibration"] == "h100-sxm"


def test_calibrate_bad_file_exit_2(capsys, tmp_path):
    code, _, err = run(capsys, "hw", "calibrate", str(tmp_path / "missing.jsonl"), "-o", str(tmp_path / "c.json"))
    assert code == 2 and "cannot read" in err


def test_check_table(capsys):
    code, out, _ = run(capsys, "hw", "check", "--json")
    assert code == 0 and len(json.loads(out)["checks"]) >= 15


def test_probe_command_reports_and_saves(capsys, tmp_path, monkeypatch):
    from hwmodel import probe

    meas = probe.LocalMeasurement(12.0, 0.1, 30.0, 8.0, 16.0)
    checks = [probe.ProbeCheck("probe-512", 1, 256, 9.0, 10.0)]
    monkeypatch.setattr(probe, "run_probe", lambda: (meas, checks))
    saved = tmp_path / "local.json"
    code, out, _ = run(capsys, "hw", "probe", "--save", str(saved), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["checks"][0]["error_pct"] == -10.0
    assert json.loads(saved.read_text())["mem_bw_gbs"] == 12.0


def test_ctx_sweep_stays_within_the_models_window(capsys):
    code, out, _ = run(capsys, "hw", "sweep", "--chip", "a100-40gb", "--model", "gpt-13b", "--over", "ctx", "--json")
    assert code == 0 and max(p["ctx"] for p in json.loads(out)["points"]) == 2048
