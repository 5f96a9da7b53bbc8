"""Forms in a Streamlit AppTest tree."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def enter_submits(at: AppTest) -> dict[str, bool]:
    """Each form on the page: whether Enter in one of its fields submits it."""
    found: dict[str, bool] = {}

    def walk(node: object) -> None:
        if getattr(node, "type", None) == "form":
            form = node.proto.form
            found[form.form_id] = form.enter_to_submit
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return found
