"""Convert the SmolLM2 GGUF into the Hugging Face layout vLLM loads (runs in the vLLM venv).

Usage: python convert_gguf_to_hf.py GGUF_FILE OUT_DIR
Writes OUT_DIR/{config.json, tokenizer files, model.safetensors} then OUT_DIR/.complete.
"""

import sys
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer


def main() -> int:
    gguf_file, out_dir = Path(sys.argv[1]), Path(sys.argv[2])
    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(gguf_file.parent, gguf_file=gguf_file.name)
    model = AutoModelForCausalLM.from_pretrained(
        gguf_file.parent, gguf_file=gguf_file.name, dtype=torch.bfloat16
    )
    # A model dequantised from GGUF refuses save_pretrained while it still says it is quantised.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    (out_dir / ".complete").write_text("ok\n")
    print(f"converted {gguf_file.name} -> {out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
