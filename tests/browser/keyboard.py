"""Keyboard helpers shared by the browser tests that work a widget with the keyboard alone."""


def focused(page, selector: str) -> bool:
    """Is the keyboard focus inside an element matching ``selector``?"""
    return page.evaluate("s => !!(document.activeElement && document.activeElement.closest(s))", selector)


def tab_until(page, is_target, what: str, max_tabs: int) -> int:
    """Press Tab until ``is_target(page)``; the number of presses (fails after ``max_tabs``, naming the focus)."""
    for presses in range(1, max_tabs + 1):
        page.keyboard.press("Tab")
        if is_target(page):
            return presses
    active = page.evaluate("() => document.activeElement && document.activeElement.outerHTML.slice(0, 200)")
    raise AssertionError(f"{max_tabs} Tabs did not reach {what}; the focus is on {active}")


def tab_to(page, selector: str, max_tabs: int, already: bool = False) -> int:
    """Press Tab until the focus is inside ``selector``; the presses. With ``already``, none if it is there."""
    if already and focused(page, selector):
        return 0
    return tab_until(page, lambda p: focused(p, selector), selector, max_tabs)
