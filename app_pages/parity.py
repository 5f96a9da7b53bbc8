"""Parity page: do engines serving "the same model" give the same answers? A prompt set goes
greedily to 2-6 engines; quality (task score, match against a reference) shows beside speed.
Answers, engine names and errors are untrusted: they reach markdown and HTML only through
services.safe_text and services.playground_text."""

from __future__ import annotations

import streamlit as st

from app_pages import common
from app_pages.common import refresh_interval
from services import endpoints
from services.errors import ShootoutError, ValidationError
from services.parity import charts, runner, tasks, views
from services.playground_text import diff_html
from services.safe_text import code_span, md_line, md_text

st.title("Answer parity")
st.caption(
    "The same prompts at temperature 0, one seed and one max-tokens, to every engine; each answer is scored "
    "and compared token by token with a reference engine. A broken chat template or quantisation looks like "
    "“faster” in a latency benchmark: here it shows as a lower score and an early divergence."
)

try:
    registered = [e.name for e in endpoints.list_engines()]
    stored = views.list_parity_runs()
except ShootoutError as error:
    st.error(md_text(str(error)))
    st.stop()

query_run = st.query_params.get("run")
if query_run and query_run.isdigit():
    st.session_state["parity_run_id"] = int(query_run)


def show_run(run_id: int) -> None:
    st.session_state["parity_run_id"] = run_id
    st.query_params["run"] = str(run_id)
    st.rerun()


def setup_section() -> None:
    start_tab, stored_tab = st.tabs(["New parity run", "Stored runs"])
    with start_tab:
        if len(registered) < 1:
            st.info(
                "No engines registered yet: add some on the Engines page (the local engines register themselves "
                "when started there or with `python cli.py local up`)."
            )
        else:
            with st.form("parity_form"):
                chosen = st.multiselect(
                    "Engines",
                    registered,
                    default=registered[:2],
                    key="parity_engines",
                    help="2 to 6. They answer one after another, so they never share the machine.",
                )
                itself = st.toggle(
                    "Also compare the reference with itself (is it deterministic?)", key="parity_itself"
                )
                reference = st.selectbox(
                    "Reference",
                    registered,
                    key="parity_reference",
                    help="The engine every other one is compared with.",
                )
                source = st.radio(
                    "Prompts",
                    ["Task set (checkable answers)", "JSONL file"],
                    horizontal=True,
                    key="parity_source",
                )
                left, middle, right, last = st.columns(4)
                count = left.number_input(
                    "Task-set prompts", 1, tasks.TASK_SET_SIZE, 20, key="parity_count"
                )
                max_tokens = middle.number_input(
                    "Max tokens", 1, 4096, runner.DEFAULT_MAX_TOKENS, key="parity_max_tokens"
                )
                seed = right.number_input("Seed", 0, 2**31 - 1, 0, key="parity_seed")
                top = last.number_input(
                    "top_logprobs",
                    0,
                    runner.MAX_TOP_LOGPROBS,
                    runner.DEFAULT_TOP_LOGPROBS,
                    key="parity_top",
                )
                upload = st.file_uploader(
                    'JSONL prompts ({"prompt": ...} or {"messages": [...]}, optional '
                    '"expected" and "check")',
                    type=["jsonl", "json", "txt"],
                    key="parity_upload",
                )
                start = st.form_submit_button("Run parity", type="primary", icon=":material/play_arrow:")
            if start:
                try:
                    names = list(chosen)
                    if reference not in names:
                        names.insert(0, reference)
                    if itself:
                        names.insert(names.index(reference) + 1, reference)
                    if source == "JSONL file":
                        if upload is None:
                            raise ValidationError("Choose a JSONL prompt file, or pick the task set.")
                        prompt_set = tasks.load_prompt_lines(
                            upload.getvalue().decode("utf-8", "replace").splitlines(), upload.name
                        )
                        label = f"file {upload.name}"
                    else:
                        prompt_set = tasks.task_set(int(count))
                        label = f"task set {tasks.TASK_SET_VERSION} (seed {tasks.DEFAULT_SEED}, {int(count)} prompts)"
                    show_run(
                        runner.start_parity(
                            names,
                            reference=reference,
                            tasks=prompt_set,
                            source=label,
                            max_tokens=int(max_tokens),
                            seed=int(seed),
                            top_logprobs=int(top),
                            viewer=common.viewer(),
                        )
                    )
                except ShootoutError as error:
                    st.error(md_text(str(error)))
    with stored_tab:
        if not stored:
            st.info("No parity runs yet. Every run is stored, and shows on the Runs page too.")
        else:
            by_id = {item.run_id: item for item in stored}
            picked = st.selectbox(
                "Stored run", list(by_id), format_func=lambda i: by_id[i].label, key="parity_pick"
            )
            if st.button("Show it", key="parity_show", icon=":material/history:"):
                show_run(int(picked))


run_id = st.session_state.get("parity_run_id")
if run_id is None:
    setup_section()
    st.stop()

with st.expander("New parity run or another stored run"):
    setup_section()

try:
    first_view = views.parity_view(int(run_id))
except ShootoutError as error:
    st.error(md_text(str(error)))
    st.stop()


@st.fragment(run_every=refresh_interval(1.0) if first_view.live else None)
def run_section() -> None:
    try:
        view = views.parity_view(int(run_id))
    except ShootoutError as error:
        st.error(md_text(str(error)))
        return
    st.subheader(f"Run #{view.run_id}: {md_line(view.name)}")
    st.caption(
        f"{md_line(view.status)} · {md_line(view.source)} · reference {code_span(view.reference)} · "
        f"max tokens {view.max_tokens} · seed {view.seed} · temperature 0 · "
        f"[open in Runs](/runs?run={view.run_id})"
    )
    if view.live:
        st.progress(min(1.0, view.progress), text=f"{view.progress * 100:.0f}% of the answers")
        if st.button("Cancel", key="parity_cancel", icon=":material/stop:"):
            runner.cancel_parity(view.run_id)
            st.rerun(scope="fragment")
    if view.error:
        st.error(md_text(view.error))
    if not view.live and first_view.live:
        st.rerun()  # draw the finished run's charts and tables outside the fragment's refresh
    headline = view.summary.get("conclusion_headline")
    if headline:
        st.markdown(md_text(headline))
    st.dataframe(views.summary_rows(view), hide_index=True, use_container_width=True)


run_section()
view = views.parity_view(int(run_id))
left, right = st.columns(2)
quality = charts.quality_speed_figure(view)
spread = charts.divergence_figure(view)
if quality is not None:
    left.plotly_chart(quality, use_container_width=True, key="parity_quality")
if spread is not None:
    right.plotly_chart(spread, use_container_width=True, key="parity_divergence")
elif view.others and not view.live:
    right.info(f"No answer diverged from {md_line(view.reference)}'s.")

st.subheader("Per prompt")
only_diverged = st.toggle("Only the prompts that diverged", key="parity_only_diverged")
rows = views.prompt_rows(view, only_diverged=only_diverged)
if rows:
    st.dataframe(rows, hide_index=True, use_container_width=True)
else:
    st.info("No prompt diverged." if only_diverged else "No answers yet.")

candidates = [row for row in view.rows if row.diverged or not only_diverged]
if candidates and view.others:
    by_index = {row.index: row for row in candidates}
    cols = st.columns(2)
    picked = cols[0].selectbox(
        "Prompt",
        list(by_index),
        key="parity_prompt_pick",
        format_func=lambda i: f"{i + 1}. {by_index[i].task.prompt_text[:80]}",
    )
    other = cols[1].selectbox("Against the reference", view.others, key="parity_other_pick")
    row = by_index[picked]
    st.text(row.task.prompt_text)
    if row.task.expected is not None:
        st.caption(f"Expected ({md_line(row.task.check)}): {code_span(str(row.task.expected))}")
    reference_answer, other_answer = row.answers.get(view.reference), row.answers.get(other)
    comparison = row.comparisons.get(other)
    if reference_answer is None or other_answer is None:
        st.info("Not answered yet.")
    elif comparison is None:
        st.warning(
            md_text(
                f"Not compared: {reference_answer.error or other_answer.error or 'an answer failed'}"
            )
        )
    else:
        point = views.divergence(reference_answer.answer, other_answer.answer, comparison)
        if point is None:
            st.success("Identical answers." if comparison.exact_match else "The same text.")
        else:
            margin = comparison.divergence_margin
            near = (
                "" if margin is None else f" ({md_line(other)} preferred its token by {margin:.3f} nats)"
            )
            st.markdown(f"First divergence at {point.unit} {point.position}{near}:")
            st.html(views.divergence_html(point, view.reference, other))
        st.caption(
            f"Whole answers, word by word: struck through only in {md_line(view.reference)}, "
            f"underlined only in {md_line(other)}."
        )
        st.html(diff_html(reference_answer.answer.text, other_answer.answer.text))
