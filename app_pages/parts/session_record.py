"""A session's record on screen: its timeline, the HTML report, and the page for those who
missed it (`/session?session=<id>`)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from services.core import ids
from services.core.safe_text import md_line
from services.sessions import view as sessions


def join_link(code: str) -> str:
    """`/session?join=<code>` at the address the presenter's browser uses for this app."""
    return sessions.join_link(st.context.url, code)


def label(shown: sessions.Shown) -> str:
    return sessions.describe(shown)


def timeline(session_id: int) -> None:
    entries = sessions.timeline(session_id)
    st.subheader("Timeline")
    if not entries:
        st.caption("Nothing shown yet.")
        return
    st.dataframe(
        pd.DataFrame(
            {
                "#": [e.seq for e in entries],
                "UTC": [e.at.strftime("%H:%M:%S") for e in entries],
                "What": [e.label for e in entries],
            }
        ),
        hide_index=True,
        key=f"session_timeline_{session_id}",
    )
    report(session_id)


def report(session_id: int) -> None:
    st.download_button(
        "HTML report of this session",
        data=lambda: sessions.session_report(session_id).data,
        file_name=f"shootout-session-{session_id}.html",
        mime="text/html",
        on_click="ignore",
        key=f"session_report_{session_id}",
    )


def record(session_id: int) -> None:
    info = sessions.get(session_id)
    when = info.started_at.strftime("%Y-%m-%d %H:%M UTC")
    status = "live" if info.live else f"ended {info.ended_at:%H:%M UTC}" if info.ended_at else ""
    st.subheader(f"{md_line(info.title) or 'Untitled session'}")
    st.caption(f"Session {info.join_code} · started {when} · {status}")
    timeline(session_id)


def record_page(raw_id: str) -> None:
    """`?session=<id>`: the record, and a way in while it is live."""
    session_id = ids.parse_id(raw_id, "session")
    record(session_id)
    info = sessions.get(session_id)
    if info.live:
        st.link_button("Join this session", f"/session?join={info.join_code}")


def sessions_list() -> None:
    """The Runs page's list of team sessions, each opening its record."""
    table = sessions.sessions_table()
    if table is None:
        return
    with st.expander(f"Team sessions ({len(table)})"):
        st.dataframe(
            table,
            hide_index=True,
            key="runs_sessions",
            column_config={"Session": st.column_config.LinkColumn(display_text=r"session=(\d+)")},
        )
