"""The pages in headless Chromium: a full round against ``heuristic`` played by clicking (the final
score shown is the engine's score for the game's move log), two bots watched step by step,
``pretrained``'s probabilities on screen, and the Melee viewer's drawn positions and action names
against the parsed replay. Screenshots of each page go to a temporary folder (printed)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from exphil.data.parse import parse_replay
from lostcities.agents.bots import make_bot
from lostcities.agents.evaluation import mirrored_schedule, play_games, seat_scores
from lostcities.game import engine
from lostcities.game.variants import CLASSIC
from tests.webapp.browser import screenshot, start_browser
from tests.webapp.lc_truth import engine_replay

By = pytest.importorskip("selenium.webdriver.common.by", reason="selenium is not installed").By


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    driver, why = start_browser()
    if driver is None:
        pytest.skip(why)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("screenshots")
    print(f"screenshots in {folder}")
    return folder


def wait_for(check: Callable[[], Any], what: str, timeout: float = 120.0) -> Any:
    """Poll ``check`` until it returns something true; fail naming ``what`` after ``timeout`` s."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _settled(driver: Any, moves: int) -> bool:
    return driver.execute_script("return page.view !== null && !page.busy && page.view.moves > arguments[0]",
                                 moves)


@pytest.mark.slow
def test_play_a_full_round_against_heuristic_by_clicking(client, browser, shots):
    browser.get(client.base + "/play?opponent=heuristic")
    wait_for(lambda: "New game" in browser.find_element(By.ID, "status").text, "the page to load")
    browser.find_element(By.ID, "seed").send_keys("7")
    browser.find_element(By.ID, "new-game").click()
    wait_for(lambda: _settled(browser, -1), "the deal")
    turn = 0
    while not browser.execute_script("return page.view.over"):
        moves = browser.execute_script("return page.view.moves")
        cards = browser.find_elements(By.CSS_SELECTOR, "#my-hand .card.playable")
        if cards:  # play the card onto its expedition where the rules allow, else discard it
            cards[turn % len(cards)].click()
            plays = browser.find_elements(By.CSS_SELECTOR, ".column.target")
            discards = browser.find_elements(By.CSS_SELECTOR, ".pile.target")
            assert len(plays) <= 1 and len(discards) == 1
            if turn == 2:
                screenshot(browser, shots, "play_card_selected")
            (plays or discards)[0].click()
        else:  # draw from the deck, or now and then from a pile
            targets = browser.find_elements(By.CSS_SELECTOR, "#deck.target, .pile.target")
            assert targets and all(t.get_attribute("data-action") for t in targets)
            targets[turn // 2 % len(targets)].click()
        wait_for(lambda m=moves: _settled(browser, m), f"move {moves + 1} to be answered")
        turn += 1
    result = browser.find_element(By.ID, "result")
    shown = int(result.get_attribute("data-you")), int(result.get_attribute("data-opponent"))
    screenshot(browser, shots, "play_final")
    log = client.ok("GET", f"/api/lc/log?game={browser.execute_script('return page.game')}")
    final = engine_replay(log)
    scores = [int(s) for s in engine.scores(final, CLASSIC)]
    assert bool(final.done) and shown == (scores[0], scores[1])
    assert log["opponent"] == "heuristic" and log["deal_seed"] == 7
    table = browser.find_element(By.ID, "score-table").text
    assert str(scores[0]) in table and str(scores[1]) in table
    # the saved log loads back through the page's file input to the same finished game
    saved = shots / "play_log.json"
    saved.write_text(json.dumps(log))
    game = browser.execute_script("return page.game")
    browser.find_element(By.ID, "load-log").send_keys(str(saved))
    wait_for(lambda: browser.execute_script("return page.game") != game, "the loaded game")
    result = browser.find_element(By.ID, "result")
    assert (int(result.get_attribute("data-you")), int(result.get_attribute("data-opponent"))) == shown


@pytest.mark.slow
def test_watch_two_bots_step_by_step(client, browser, shots):
    browser.get(client.base + "/watch")
    wait_for(lambda: "Start" in browser.find_element(By.ID, "status").text, "the page to load")
    for field, value in (("player-a", "heuristic"), ("player-b", "careful"), ("games", "1"), ("seed", "3")):
        box = browser.find_element(By.ID, field)
        box.clear()
        box.send_keys(value)
    browser.find_element(By.ID, "start").click()
    wait_for(lambda: browser.execute_script("return watch.view !== null && !watch.busy"), "the start")
    for n in range(1, 5):
        browser.find_element(By.ID, "step").click()
        wait_for(lambda n=n: browser.execute_script("return !watch.busy && watch.view.log.length") == n,
                 f"step {n}")
        assert len(browser.find_elements(By.CSS_SELECTOR, "#log .move")) == n
    screenshot(browser, shots, "watch_steps")
    delay = browser.find_element(By.ID, "delay")
    delay.clear()
    delay.send_keys("0")
    browser.find_element(By.ID, "autoplay").click()
    wait_for(lambda: browser.execute_script("return watch.view.log.length") >= 10, "autoplay to go on")
    browser.find_element(By.ID, "autoplay").click()  # pause
    wait_for(lambda: browser.execute_script("return !watch.busy && watch.timer === null"), "the pause")
    paused = browser.execute_script("return watch.view.log.length")
    time.sleep(0.5)
    assert browser.execute_script("return watch.view.log.length") == paused
    browser.find_element(By.ID, "to-end").click()
    wait_for(lambda: browser.execute_script("return !watch.busy && watch.view.over"), "the game's end")
    keys, a_seat, first = mirrored_schedule(1, 3)
    out = play_games(CLASSIC, make_bot("heuristic", CLASSIC), make_bot("careful", CLASSIC), keys[:1],
                     a_seat[:1], first[:1])
    a, b = seat_scores(out["scores"], a_seat[:1])
    running = browser.find_element(By.ID, "running")
    shown = int(running.get_attribute("data-a")), int(running.get_attribute("data-b"))
    assert shown == (int(a[0]), int(b[0]))
    assert browser.find_element(By.ID, "habits-table").is_displayed()
    screenshot(browser, shots, "watch_over")


def test_pretrained_probabilities_and_hint_on_screen(client, browser, shots):
    browser.get(client.base + "/play?opponent=pretrained")
    wait_for(lambda: "New game" in browser.find_element(By.ID, "status").text, "the page to load")
    browser.find_element(By.CSS_SELECTOR, "#seat option[value='1']").click()  # the agent moves first
    browser.find_element(By.ID, "new-game").click()
    wait_for(lambda: _settled(browser, -1), "the deal")
    probs = browser.execute_script("return page.view.log[0].probs")
    rows = browser.find_elements(By.CSS_SELECTOR, "#log .move[data-index='0'] .prob")
    assert probs and len(rows) == len(probs)
    for row, p in zip(rows, probs, strict=True):
        assert p["name"] in row.text and f"{100 * p['p']:.1f}%" in row.text
    assert sum(p["p"] for p in probs) <= 1 + 1e-6
    browser.find_element(By.ID, "hint").click()
    hint = wait_for(lambda: browser.find_elements(By.ID, "hint-text"), "the hint")[0]
    assert hint.text.startswith("pretrained suggests: ")
    screenshot(browser, shots, "play_pretrained_probabilities")
    browser.find_element(By.ID, "show-probs").click()
    assert not browser.find_elements(By.CSS_SELECTOR, "#log .prob")


FOX_SPECIAL = {360: "SHINE_START", 361: "SHINE_LOOP", 363: "SHINE_END", 365: "AIR_SHINE_START",
               366: "AIR_SHINE_LOOP", 368: "AIR_SHINE_END"}
"""Fox's own reflector states (exphil.sim.fox); other states take libmelee's common names."""


def test_melee_viewer_draws_the_parsed_frames(client, browser, shots, replay_path):
    from melee.enums import Action
    from selenium.webdriver.support.ui import Select

    name = "exphil_fox_multishine.slp"
    table = parse_replay(replay_path(name)).table
    browser.get(client.base + "/melee")
    option = f"#replay-list option[value='{name}']"
    wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, option), "the replay list")
    Select(browser.find_element(By.ID, "replay-list")).select_by_value(name)
    browser.find_element(By.ID, "open-replay").click()
    wait_for(lambda: browser.execute_script("return window.meleeDrawn"), "the first frame")
    for row in (0, 420, 600, 1500):
        browser.execute_script("goto(arguments[0])", row)
        drawn = browser.execute_script("return window.meleeDrawn")
        assert drawn["row"] == row and drawn["frame"] == table["frame"][row].as_py()
        for p in drawn["players"]:
            prefix = f"p{p['player']}_"
            assert p["x"] == pytest.approx(table[prefix + "x"][row].as_py(), abs=1e-4)
            assert p["y"] == pytest.approx(table[prefix + "y"][row].as_py(), abs=1e-4)
            action = table[prefix + "action"][row].as_py()
            fox = table[prefix + "character"][row].as_py() == 2
            want = FOX_SPECIAL[action] if fox and action >= 341 else Action(action).name
            assert p["action"] == action and p["name"] == want
            assert want in browser.find_element(By.ID, f"p{p['player']}-action").text
        a, b = drawn["players"]
        if abs(a["x"] - b["x"]) > 1:  # one scale: canvas x grows with game x, canvas y falls with game y
            scale = (b["px"] - a["px"]) / (b["x"] - a["x"])
            assert scale > 0
            if abs(a["y"] - b["y"]) > 1:
                assert (b["py"] - a["py"]) / (b["y"] - a["y"]) == pytest.approx(-scale, rel=1e-6)
    screenshot(browser, shots, "melee_replay")
    status = browser.find_element(By.ID, "status").text
    assert "Final Destination" in status and str(table.num_rows) in status
    assert np.isfinite(drawn["players"][0]["px"])


@pytest.mark.slow
def test_melee_viewer_highlights_a_rollouts_unknown_frames(client, browser, shots, replay_path, runs_dir):
    """A real teacher rollout from the falling start: the red ticks and the banner are on exactly the
    rows the API flags (which the slow API test checks against the simulator)."""
    from selenium.webdriver.support.ui import Select

    from exphil.closed_loop.evaluate import teacher_rollouts, write_rollouts
    from exphil.closed_loop.starts import Drill

    drill = Drill.from_replay(replay_path("exphil_fox_multishine_closed.slp"))
    states, pads = teacher_rollouts(drill, ("falling",), 120)
    write_rollouts(states, pads, ["teacher_falling"], drill, runs_dir / "browser_run" / "closed_loop")
    path = "browser_run/closed_loop/teacher_falling.parquet"
    flagged = client.ok("GET", f"/api/melee/open?kind=rollout&path={path}")["rollout"]["unknown"]["rows"]
    assert flagged
    browser.get(client.base + "/melee")
    wait_for(lambda: "replays from" in browser.find_element(By.ID, "status").text, "the page to load")
    browser.find_element(By.ID, "run").send_keys("browser_run")
    browser.find_element(By.ID, "list-rollouts").click()
    option = f"#rollout-list option[value='{path}']"
    wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, option), "the rollout list")
    Select(browser.find_element(By.ID, "rollout-list")).select_by_value(path)
    browser.find_element(By.ID, "open-rollout").click()
    wait_for(lambda: browser.find_elements(By.ID, "metrics-table"), "the rollout")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#timeline .tick")) == len(flagged)
    assert f"knowledge: {len(flagged)}" in browser.find_element(By.ID, "unknown-count").text
    for row in (flagged[0] - 1, flagged[0]):
        browser.execute_script("goto(arguments[0])", row)
        shown = browser.find_element(By.ID, "unknown-banner").is_displayed()
        assert shown == (row in flagged)
    screenshot(browser, shots, "melee_rollout_unknown")
