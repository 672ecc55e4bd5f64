"""Turn a GGUF model file into a plain Hugging Face folder (config, tokenizer, safetensors).

vLLM 0.27 and later read no GGUF; transformers' `gguf_file=` support dequantizes it. Offline:
everything comes from the file. Usage: python gguf_to_hf.py MODEL.gguf OUT_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

from transformers import AutoModelForCausalLM, AutoTokenizer


def convert(gguf: Path, out: Path) -> None:
    """Write the tokenizer and float32 weights of `gguf` into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    tokenizer.save_pretrained(out)
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype="float32")
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # the weights are dequantized already; save them plainly
    plain = AutoModelForCausalLM.from_config(config)
    plain.load_state_dict(loaded.state_dict())
    plain.save_pretrained(out)


if __name__ == "__main__":
    convert(Path(sys.argv[1]), Path(sys.argv[2]))
    print(f"wrote {sys.argv[2]}")
