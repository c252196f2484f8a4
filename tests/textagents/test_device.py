"""The ``device`` / ``dtype`` settings: checked, resolved on this machine (CUDA only simulated), and refused with
one line naming the bad value and the valid ones."""

from __future__ import annotations

import pytest
import torch

from textagents.cli import main
from textagents.device import DeviceError, check_device, rank_device, resolve_device, resolve_dtype
from textagents.methods.core.config import ConfigError, config_from_dict
from textagents.methods.registry import METHODS, method_class


@pytest.fixture
def two_gpus(monkeypatch):
    """A machine that says it has two CUDA GPUs (nothing is run on them)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)


def test_auto_is_the_cpu_in_float32_without_a_gpu(no_gpu):
    device = resolve_device("auto")
    assert device == torch.device("cpu") and resolve_dtype("auto", device) == torch.float32


def test_auto_is_cuda_in_bfloat16_with_a_gpu(two_gpus):
    device = resolve_device("auto")
    assert device.type == "cuda" and resolve_dtype("auto", device) == torch.bfloat16
    assert resolve_device("cuda:1") == torch.device("cuda", 1)
    assert resolve_dtype("float16", device) == torch.float16 and resolve_dtype("float32", device) == torch.float32


@pytest.mark.parametrize("value", ["gpu", "CUDA", "cuda:", "cuda:-1", "mps", "", 0])
def test_a_bad_device_is_one_line_naming_it_and_the_valid_ones(value):
    with pytest.raises(DeviceError) as error:
        check_device(value)
    message = str(error.value)
    assert "\n" not in message and repr(value) in message and "auto, cpu, cuda, cuda:N" in message


def test_a_gpu_the_machine_lacks_is_refused_clearly(two_gpus):
    with pytest.raises(DeviceError, match=r"'cuda:3': this machine has 2 CUDA GPU\(s\), cuda:0 to cuda:1"):
        resolve_device("cuda:3")


def test_cuda_without_a_gpu_is_refused_clearly(no_gpu):
    with pytest.raises(DeviceError, match="'cuda': this machine has no CUDA GPU"):
        resolve_device("cuda")


def test_bad_dtype_is_refused():
    with pytest.raises(DeviceError, match="dtype must be one of auto, float32, bfloat16, float16; got 'fp8'"):
        resolve_dtype("fp8", torch.device("cpu"))


def test_each_llm_process_gets_its_own_gpu(two_gpus):
    assert [rank_device(torch.device("cuda"), r) for r in (0, 1)] == [torch.device("cuda", i) for i in (0, 1)]
    assert rank_device(torch.device("cpu"), 1) == torch.device("cpu")
    with pytest.raises(DeviceError, match="LLM process 2 needs cuda:2"):
        rank_device(torch.device("cuda"), 2)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_methods_config_has_the_settings_and_auto_picks_cuda_when_there_is_one(method, monkeypatch):
    cls = method_class(method).config_class
    config = config_from_dict(cls, {}, "test")
    assert (config.device, config.dtype) == ("auto", "auto")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert config.torch_device() == torch.device("cpu") and config.torch_dtype() == torch.float32
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert config.torch_device().type == "cuda" and config.torch_dtype() == torch.bfloat16


@pytest.mark.parametrize(("key", "value"), [("device", "gpu"), ("dtype", "half")])
def test_a_config_with_a_bad_value_is_a_config_error(key, value):
    cls = method_class("example").config_class
    with pytest.raises(ConfigError, match=f"test: {key} must be one of .*; got '{value}'"):
        config_from_dict(cls, {key: value}, "test")


def test_the_cli_refuses_a_bad_device_with_exit_2(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["method", "run", "example", "benchmarks/methods/example/smoke.yaml", "--out", "x", "--device", "gpu"])
    assert exit_.value.code == 2
    assert "device must be one of auto, cpu, cuda, cuda:N; got 'gpu'" in capsys.readouterr().err


def test_the_cli_refuses_a_gpu_it_lacks_with_exit_2(tmp_path, no_gpu, capsys, monkeypatch):
    from pathlib import Path

    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    out = str(tmp_path / "r")
    code = main(["method", "run", "ellm", "benchmarks/methods/ellm/smoke.yaml", "--out", out, "--device", "cuda"])
    assert code == 2 and "'cuda': this machine has no CUDA GPU" in capsys.readouterr().err
