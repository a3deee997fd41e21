"""Every CSV the app offers is a file Excel reads as UTF-8: its bytes come from ``serialize.csv_file`` (a byte-order
mark, then UTF-8). Without the mark, Excel on a Chinese Windows reads 猫 as GBK and shows garbage."""
from __future__ import annotations

import ast
from pathlib import Path

from transformer_core.records.serialize import csv_file

ROOT = Path(__file__).resolve().parent.parent


def _csv_downloads() -> list[tuple[str, ast.Call]]:
    found = []
    for path in sorted([*(ROOT / "ui").rglob("*.py"), *(ROOT / "pages").glob("*.py"), ROOT / "app.py"]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and _is_download(node.func)
                    and any(k.arg == "mime" and isinstance(k.value, ast.Constant) and k.value.value == "text/csv"
                            for k in node.keywords)):
                found.append((f"{path.name}:{node.lineno}", node))
    return found


def _is_download(func: ast.expr) -> bool:
    """``st.download_button`` (or a column's), or ``ui.shell.downloads.download_button(target, label, data, …)``."""
    return ((isinstance(func, ast.Attribute) and func.attr == "download_button")
            or (isinstance(func, ast.Name) and func.id == "download_button"))


def _data(call: ast.Call) -> ast.expr:
    first = 2 if isinstance(call.func, ast.Name) else 1  # the wrapper's first argument is the target (st, a column)
    given = [k.value for k in call.keywords if k.arg == "data"] or call.args[first:first + 1]
    value = given[0]
    return value.body if isinstance(value, ast.Lambda) else value  # built on the click: data=lambda: …


def test_every_csv_download_has_a_byte_order_mark():
    downloads = _csv_downloads()
    assert len(downloads) >= 6  # stage numbers, rollout/flow, ablation ×3, predictions
    for where, call in downloads:
        data = _data(call)
        name = data.func.attr if isinstance(data.func, ast.Attribute) else getattr(data.func, "id", "")
        assert isinstance(data, ast.Call) and name == "csv_file", f"{where}: CSV bytes not from csv_file"


def test_csv_file_is_utf8_after_one_mark():
    assert csv_file("query \\ key,0: 猫\n") == b"\xef\xbb\xbfquery \\ key,0: \xe7\x8c\xab\n"
    assert csv_file("a\n").decode("utf-8-sig") == "a\n"
