"""What the gate finds beside its checks: events no threshold is asked about, each a finding of
its own that fails the gate by default (issue 55). Each is judged per pair (a candidate's engine
against the baseline's) from the stored runs:

- **broken workload**: a side whose engine did not serve the workload it was asked: the stream
  ran past the max_tokens asked (or, for a run stored without the benchmark's own findings,
  more output tokens per request than asked), a usage that disagrees with the stream, an
  impossible counter (services/bench/findings.py). The candidate's fails the gate (exit 1) and
  a baseline's makes the pair not comparable (exit 3), whatever the flags:
  `--allow-incomparable` judges setups that differ, never an engine that broke the workload.
- **stall**: a wait in the candidate (its TTFT, a gap between two tokens, a request's E2E) beyond
  services.bench.stats.tail_limit_s of the run's own p90 of it, beyond `BASELINE_TAIL_FACTOR`
  times the baseline's longest such wait (which holds what the setup does when healthy: a long
  prefill pausing the other streams) and beyond the generator's own longest delay. One such
  request moves the rate far more than its share: a finding, exit 1 (`--allow-stall`), ahead of
  an untrusted measurement (the generator's own delays are already ruled out).
- **jump**: a candidate `JUMP_FACTOR` times faster than its baseline on the same setup (output
  tokens per second, or E2E p50); and answers identical across distinct prompts where the
  baseline's were not. No hardware explains either: exit 1 (`--allow-jump`).
- **untrusted**: a side whose figures cannot be trusted: its load generator was client-bound
  (services/bench/selfcheck.py, the run's own verdict, weighed against its figures), or its
  engines ran together on one host. Exit 4, ahead of the checks' regressions
  (`--allow-untrusted`): a loaded host read 9 healthy candidates of 10 as regressions.

A finding's text carries its evidence; the terminal, the Markdown and the JUnit all show it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import select

from db.models import Run
from db.session import session_scope
from services.bench.comparability import Comparability, Difference
from services.bench.findings import IDENTICAL_ANSWERS, IGNORED_MAX_TOKENS, Finding
from services.bench.selfcheck import CLIENT_BOUND
from services.bench.stats import tail_limit_s
from services.bench.summary import BenchSummary
from services.core import stored_json
from services.runs.records import Series, format_value

FindingKind = Literal["broken workload", "stall", "jump", "identical answers", "untrusted"]
FindingStatus = Literal["fail", "allowed", "note"]
Side = Literal["baseline", "candidate"]

#: A candidate this many times faster than its baseline on the same setup (output tokens per
#: second, or E2E p50) is a jump no hardware explains. Real upgrades measured so far stay under
#: it (a new engine version, FP8 weights, speculative decoding: 1.1x to 2.5x); issue 55's cache in
#: front of a broken model read 24x.
JUMP_FACTOR = 3.0
#: A candidate's longest wait is a stall only beyond this many times the baseline's longest of
#: the same wait: a long prefill pauses the other streams for as long in a healthy run.
BASELINE_TAIL_FACTOR = 3.0
#: More output tokens per request than asked, by more than this share, is max_tokens ignored
#: (the comparability's own tolerance of the output length as served).
OVER_ASKED_TOLERANCE = 0.05
#: The flag that passes each finding (None: nothing passes it).
ALLOW_FLAGS: dict[FindingKind, str | None] = {
    "broken workload": None,
    "stall": "--allow-stall",
    "jump": "--allow-jump",
    "identical answers": "--allow-jump",
    "untrusted": "--allow-untrusted",
}
#: The waits a stall is looked for in: (metric, its name in the words, its name as a figure).
_WAITS = (
    ("ttft_s", "wait for a first token", "TTFT"),
    ("itl_s", "gap between two tokens", "ITL"),
    ("e2e_s", "request", "E2E"),
)


@dataclass(frozen=True)
class GateFinding:
    kind: FindingKind
    #: The pair's engine (as the checks name it).
    engine: str
    side: Side
    #: One line: what was found, its evidence, and what passes it.
    text: str
    status: FindingStatus
    #: A few words for the gate's closing line ("#12 vllm client-bound"); the text when empty.
    brief: str = ""

    @property
    def failed(self) -> bool:
        return self.status == "fail"

    @property
    def flag(self) -> str | None:
        return ALLOW_FLAGS[self.kind]


@dataclass(frozen=True)
class Allowed:
    """The flags that pass findings (`--allow-stall`, `--allow-jump`, `--allow-untrusted`)."""

    stall: bool = False
    jump: bool = False
    untrusted: bool = False

    def passes(self, kind: FindingKind) -> bool:
        return {
            "stall": self.stall,
            "jump": self.jump,
            "identical answers": self.jump,
            "untrusted": self.untrusted,
        }.get(kind, False)


def summaries_of(run_ids: Sequence[int]) -> dict[int, BenchSummary]:
    """Each run's stored summary, typed (the self-check, the findings, how engines ran)."""
    with session_scope() as session:
        rows = session.execute(select(Run.id, Run.summary).where(Run.id.in_(list(run_ids)))).all()
    return {run_id: BenchSummary.from_json(summary) for run_id, summary in rows}


def _finding(
    kind: FindingKind,
    engine: str,
    side: Side,
    text: str,
    allowed: Allowed,
    fails: bool = True,
    brief: str = "",
) -> GateFinding:
    if not fails:
        return GateFinding(kind, engine, side, text, "note", brief)
    flag = ALLOW_FLAGS[kind]
    if allowed.passes(kind):
        return GateFinding(kind, engine, side, f"{text} (allowed by {flag})", "allowed", brief)
    passes = f" ({flag} passes it)" if flag else ""
    return GateFinding(kind, engine, side, f"{text}{passes}", "fail", brief)


def _engine_findings(summary: BenchSummary | None, engine: str) -> list[Finding]:
    return summary.findings(engine) if summary is not None else []


def broken_workload(series: Series, summary: BenchSummary | None) -> list[str]:
    """What says this side's engine broke the workload, in words (none: it served it)."""
    found = _engine_findings(summary, series.engine)
    # The benchmark's own findings that fail (services/bench/findings.py): counters the stream
    # refuted or no answer can have, a stream past max_tokens.
    said = [f.message for f in found if f.failing]
    block = summary.engine(series.engine) if summary else None
    # A run stored before findings (or an import) has only its lengths to tell.
    looked = block is not None and block.findings is not None
    over = "" if looked else _over_asked(series.fingerprint)
    if over and not any(f.check == IGNORED_MAX_TOKENS for f in found):
        said.append(f"{series.label}: {over}")
    return said


def _over_asked(fingerprint: Comparability) -> str:
    """max_tokens ignored, as the stored lengths tell it ("" when they do not)."""
    asked, served = fingerprint.output_len_asked, fingerprint.output_len_served
    if asked is None or served is None or asked <= 0 or served <= asked * (1 + OVER_ASKED_TOLERANCE):
        return ""
    return (
        f"{served:,.1f} output tokens per request against {asked:g} asked: the engine ignored max_tokens"
    )


def _lag_max_s(summary: BenchSummary | None, engine: str) -> float:
    """The generator's own longest delay (its loop lag's max) while it measured this engine."""
    block = summary.engine(engine) if summary else None
    generator = stored_json.mapping(block.generator if block is not None else None)
    lag = stored_json.number(stored_json.mapping(generator.get("loop_lag_ms")).get("max"))
    return (lag or 0.0) / 1000


def stalls(base: Series, cand: Series, lag_max_s: float = 0.0) -> list[str]:
    """Each wait of the candidate that is a stall (the module's docstring), in words."""
    found = []
    for metric, words, short in _WAITS:
        stats = cand.stats.get(metric) or {}
        longest, p90 = stats.get("max"), stats.get("p90")
        if longest is None or p90 is None:
            continue
        base_longest = (base.stats.get(metric) or {}).get("max")
        limit = max(
            tail_limit_s(p90),
            BASELINE_TAIL_FACTOR * (base_longest or 0.0),
            p90 + lag_max_s,
        )
        if longest <= limit:
            continue
        than = f"the run's own {short} p90 {format_value(metric, p90)}"
        if base_longest is not None:
            than += f", the baseline's longest {format_value(metric, base_longest)}"
        found.append(f"a {words} took {format_value(metric, longest)} ({than})")
    return found


def jump(base: Series, cand: Series) -> str:
    """The candidate's jump over its baseline, in words ("" when none)."""
    for metric, name in (
        ("output_throughput_tok_s", "output tok/s"),
        ("request_throughput_rps", "requests/s"),
    ):
        a, b = base.rates.get(metric), cand.rates.get(metric)
        if a and b and a > 0:
            if b / a >= JUMP_FACTOR:
                return (
                    f"{name} {format_value(metric, a)} -> {format_value(metric, b)}, "
                    f"{b / a:.1f}x the baseline's"
                )
            break  # one rate judges: requests/s only where tokens were not counted
    a, b = (base.stats.get("e2e_s") or {}).get("p50"), (cand.stats.get("e2e_s") or {}).get("p50")
    if a and b and b > 0 and a / b >= JUMP_FACTOR:
        return (
            f"E2E p50 {format_value('e2e_s', a)} -> {format_value('e2e_s', b)}, {a / b:.1f}x as fast "
            "as the baseline"
        )
    return ""


def untrusted(series: Series, summary: BenchSummary | None) -> list[tuple[str, str]]:
    """Why this side's figures cannot be trusted: (a few words, the evidence) each; none when
    they can."""
    if summary is None:
        return []
    said = []
    check = summary.run_check()
    own = [
        load
        for load in check.loads
        if load.state == CLIENT_BOUND
        and (load.label == series.engine or load.label.startswith(f"{series.engine} at "))
    ]
    for load in own:
        said.append((f"#{series.run_id} {load.label} client-bound", load.evidence))
    if not own and check.client_bound and not check.loads:
        said.append((f"#{series.run_id} client-bound", "the run's self-check said so"))
    ran = summary.engines_that_ran()
    if summary.engines_run == "together" and len(ran) > 1:
        why = f"{len(ran)} engines on one host at once ({', '.join(ran)}): each one's figures "
        said.append((f"#{series.run_id}'s engines ran together", why + "include the others' load"))
    return said


def changed_side(difference: Difference, base: Comparability, cand: Comparability) -> Side | None:
    """Which side changed a field that makes two runs not comparable, where one side kept to
    what was asked and the other did not (its answers' length, its token count, its cache);
    None for a setup the two runs were given differently (a load level, a warm-up)."""

    def off(fp: Comparability) -> bool | None:
        if difference.field == "output_len_served":
            asked, served = fp.output_len_asked, fp.output_len_served
            if asked is None or served is None or asked <= 0:
                return None
            return abs(served - asked) / asked > OVER_ASKED_TOLERANCE
        if difference.field == "fixed_output_honoured":
            return None if fp.fixed_output_honoured is None else not fp.fixed_output_honoured
        if difference.field == "token_counter":
            return None if fp.token_counter is None else fp.token_counter != "engine usage"
        if difference.field in ("prefix_cache", "cached_share"):
            return None if fp.prefix_cache is None else fp.prefix_cache == "warm"
        return None

    a, b = off(base), off(cand)
    if a is False and b:
        return "candidate"
    if b is False and a:
        return "baseline"
    return None


def pair_findings(
    base: Series,
    cand: Series,
    summaries: dict[int, BenchSummary],
    allowed: Allowed,
    *,
    judged: bool,
    changed: Sequence[str] = (),
) -> list[GateFinding]:
    """Every finding of one pair (`judged`: its runs are comparable, or compared anyway: only
    then is a jump or a stall read against the baseline; `changed`: what the comparison measures
    that differs, the model or the engine, named beside a jump)."""
    engine = cand.engine if cand.engine == base.engine else f"{base.engine} -> {cand.engine}"
    base_summary, cand_summary = summaries.get(base.run_id), summaries.get(cand.run_id)
    out: list[GateFinding] = []
    sides: tuple[tuple[Side, Series, BenchSummary | None], ...] = (
        ("baseline", base, base_summary),
        ("candidate", cand, cand_summary),
    )
    for side, series, summary in sides:
        said = broken_workload(series, summary)
        if said:
            text = f"the {side} {series.label} broke the workload: {'; '.join(said)}"
            out.append(_finding("broken workload", engine, side, text, allowed))
    for side, series, summary in sides:
        reasons = untrusted(series, summary)
        if reasons:
            text = f"the {side}'s figures cannot be trusted: " + "; ".join(
                f"{brief}: {evidence}" for brief, evidence in reasons
            )
            brief = ", ".join(brief for brief, _ in reasons)
            out.append(_finding("untrusted", engine, side, text, allowed, brief=brief))
    if not judged:
        return out
    stalled = stalls(base, cand, _lag_max_s(cand_summary, cand.engine))
    if stalled:
        text = (
            f"{cand.label} stalled: {'; '.join(stalled)}: a tail event far beyond the run's own "
            "requests, which moves its rates more than any threshold allows for"
        )
        out.append(_finding("stall", engine, "candidate", text, allowed))
    base_stalled = stalls(cand, base, _lag_max_s(base_summary, base.engine))
    if base_stalled:
        text = f"the baseline {base.label} stalled: {'; '.join(base_stalled)}: its rates read low"
        out.append(_finding("stall", engine, "baseline", text, allowed, fails=False))
    faster = jump(base, cand)
    if faster:
        text = (
            f"{cand.label} is many times faster on the same setup: {faster}; no hardware explains "
            f"a jump of {JUMP_FACTOR:g}x (a cache in front of the model, answers cut short, a "
            "counter that lies?)"
        )
        if changed:
            text += f"; what changed, which may explain it: {', '.join(changed).lower()}"
        out.append(_finding("jump", engine, "candidate", text, allowed))
    same = [
        f.message for f in _engine_findings(cand_summary, cand.engine) if f.check == IDENTICAL_ANSWERS
    ]
    if same:
        before = any(f.check == IDENTICAL_ANSWERS for f in _engine_findings(base_summary, base.engine))
        text = f"{cand.label}: {'; '.join(same)}" + (
            " (the baseline's answers were identical too)" if before else ""
        )
        out.append(_finding("identical answers", engine, "candidate", text, allowed, fails=not before))
    return out
