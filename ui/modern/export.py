"""One JSON download per tab of "Attention since 2017": the numbers the tab draws, NumPy arrays as nested lists."""
from __future__ import annotations

import json
from typing import Any

import numpy as np

from ..shell.downloads import download_button
from ..shell.i18n import _


def plain_data(value: Any) -> Any:
    """``value`` with every NumPy array or scalar turned into lists and numbers; a non-finite float becomes its name
    (``"inf"``, ``"-inf"``, ``"nan"``), as the trace files write it, so the file is strict JSON."""
    if isinstance(value, dict):
        return {str(k): plain_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_data(v) for v in value]
    if isinstance(value, np.ndarray):
        return plain_data(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return "nan" if np.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def json_download(target, data: dict, name: str, key: str) -> None:
    """A "… as JSON" button in ``target`` for ``data`` (file ``{name}.json``)."""
    text = json.dumps(plain_data(data), ensure_ascii=False, indent=1, allow_nan=False)
    download_button(target, "⬇ " + _("This tab's numbers as JSON"), text, mime="application/json",
                    file_name=f"{name}.json", key=key, width="stretch")
