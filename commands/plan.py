"""`shootout plan`: KV cache, weights, fit and speed limits, the same numbers as the Planner page.

shootout plan --model llama-3-70b --dtype bf16 --batch 64 --context 8192 --gpu h100-sxm --json
shootout plan --list
shootout plan --model smollm2-135m --gpu rtx-4090 --engine llamacpp   # plus a launch command
"""

from __future__ import annotations

import argparse

from commands import arguments, print_json
from services.core import units
from services.core.errors import ValidationError
from services.planner import PlanRequest, list_presets, make_plan, plan_to_dict
from services.planner.launch import build_launch, launch_engines, options_for_plan
from services.planner.specs import GB, GIB


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "plan",
        help="will it fit, and how fast can it possibly go (KV cache, weights, roofline)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--list", action="store_true", help="list model, GPU and dtype names, then exit")
    parser.add_argument("--model", help="model preset key (see --list)")
    parser.add_argument("--gpu", help="GPU preset key (see --list)")
    parser.add_argument(
        "--dtype", help="weight format, e.g. bf16, fp8, int4-awq, gguf-q4_k_m (default: the model's)"
    )
    parser.add_argument(
        "--kv-dtype", default="auto", help="KV-cache element type: auto (16-bit), fp8, fp32, q8_0..."
    )
    parser.add_argument(
        "--batch",
        type=arguments.whole(1, arguments.MAX_COUNT),
        default=1,
        help="concurrent sequences (default 1)",
    )
    parser.add_argument(
        "--context",
        type=arguments.whole(1, arguments.MAX_TOKENS * 100),
        default=8192,
        help="tokens per sequence (default 8192)",
    )
    parser.add_argument(
        "--tp",
        type=arguments.whole(1, 4096),
        default=1,
        help="tensor-parallel degree = GPUs (default 1)",
    )
    parser.add_argument(
        "--mem-util",
        type=arguments.number(0, 1, above=True),
        default=0.9,
        help="usable fraction of GPU memory (default 0.9)",
    )
    parser.add_argument(
        "--block-size",
        type=arguments.whole(1, arguments.MAX_TOKENS),
        default=16,
        help="KV block (page) size in tokens (default 16)",
    )
    parser.add_argument(
        "--reserve-gib",
        type=arguments.number(0, 1e6),
        default=0.0,
        help="GiB per GPU kept for activations etc.",
    )
    parser.add_argument(
        "--achieved",
        type=arguments.number(0, 1e12, above=True),
        help="measured decode tokens/s to set against the bound",
    )
    parser.add_argument(
        "--engine", choices=sorted(launch_engines()), help="also print this engine's launch command"
    )
    parser.add_argument(
        "--hf-model", help="model id or path for the launch command (default: the preset's HF id)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    if args.list:
        presets = list_presets()
        if args.json:
            print_json(presets)
        else:
            for section, entries in presets.items():
                print(f"{section}:")
                for key, label in entries.items():
                    print(f"  {key:<18} {label}")
        return 0
    if not args.model or not args.gpu:
        raise ValidationError("Give --model and --gpu (see `shootout plan --list`).")
    plan = make_plan(
        PlanRequest(
            model=args.model,
            gpu=args.gpu,
            dtype=args.dtype,
            batch=args.batch,
            context=args.context,
            tp=args.tp,
            kv_dtype=args.kv_dtype,
            mem_util=args.mem_util,
            block_size=args.block_size,
            reserve_gib=args.reserve_gib,
            achieved_tok_s=args.achieved,
        )
    )
    payload = plan_to_dict(plan)
    if args.engine:
        command = build_launch(options_for_plan(plan.request, args.engine, model=args.hf_model))
        payload["launch"] = {
            "engine": command.engine,
            "plain": command.plain,
            "docker": command.docker,
            "base_url": command.base_url,
            "metrics": command.metrics,
            "notes": command.notes,
        }
    if args.json:
        print_json(payload)
    else:
        _print_text(payload)
    return 0


def _size(value: float) -> str:
    return f"{value / GB:,.1f} GB = {value / GIB:,.1f} GiB"


def _print_text(p: dict) -> None:
    i, kv, w, fit, d, pre = p["inputs"], p["kv_cache"], p["weights"], p["fit"], p["decode"], p["prefill"]
    print(
        f"{p['model']['name']} ({i['dtype']}, KV {i['kv_dtype']}) on {i['tp']} x {p['gpu']['name']}, "
        f"batch {i['batch']} x {i['context']:,} tokens"
    )
    print(f"  KV cache      {kv['bytes_per_token']:,} bytes/token; total {_size(kv['total']['bytes'])}")
    print(f"  weights       {_size(w['bytes'])} ({w['bits_per_weight']:.2f} bits/weight)")
    verdict = "fits" if fit["fits"] else "does NOT fit"
    print(
        f"  fit           {verdict}: {fit['needed_bytes_per_gpu'] / GIB:,.1f} of "
        f"{fit['usable_bytes_per_gpu'] / GIB:,.1f} GiB usable per GPU; "
        f"max {fit['max_sequences_at_context']:,} sequences at this context"
    )
    print(
        f"  decode bound  {d['bound_tok_s']:,.1f} tok/s ({d['per_sequence_tok_s']:,.1f} per sequence), "
        f"limited by {d['limited_by']}; compute-bound from batch {d['crossover_batch'] or 'never (KV-bound)'}"
    )
    print(
        f"  prefill bound {pre['bound_tok_s']:,.0f} tok/s; TTFT >= "
        f"{units.duration(pre['ttft_lower_bound_s'])}"
    )
    if "measured" in p:
        m = p["measured"]
        print(f"  measured      {m['achieved_tok_s']:,.1f} tok/s = {m['fraction']:.1%} of the bound")
    for warning in p["warnings"]:
        print(f"  warning: {warning}")
    if "launch" in p:
        print()
        print(p["launch"]["plain"])
        for note in p["launch"]["notes"]:
            print(f"# {note}")
