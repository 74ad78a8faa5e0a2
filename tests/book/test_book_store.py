"""The game book: a whole 5-round game recorded, undone, exported, imported; refusals of bad changes and files."""

import json
import sqlite3

import pytest

from melee_helpers import report_of, scene_of
from rules.diskwars.melee import resolve_melee
from webui.book import GameBook, BookError, fold_events


def round_scene(r):
    """Each round one orc disk pins one empire disk; the orc (attack 5) kills it, taking 2 back."""
    return scene_of([
        {"id": "orc", "player": "orcs", "stats": {"attack": 5, "counter": 1, "toughness": 9, "vigor": 1},
         "tokens": {"activation": 1, "damage": 0, "wound": 0, "power": 0}},
        {"id": f"emp{r}", "player": "empire", "stats": {"attack": 0, "counter": 2, "toughness": 4}},
    ], players=("orcs", "empire"))


def play_round(book, r):
    book.set_phase(r, "activation")
    book.set_tokens("orc", player="orcs", activation=1, power=1 if r == 3 else 0)
    book.set_tokens(f"emp{r}", player="empire", activation=1)
    book.set_phase(r, "melee")
    melee = resolve_melee(round_scene(r), report_of([("orc", f"emp{r}")], [("E1", ["orc"], [f"emp{r}"])]))
    state = book.record_melee(melee if r % 2 else melee.to_json())  # a MeleeResult or its JSON
    assert state["disks"][0]["disk"] == "orc" and state["disks"][0]["damage"] == 2
    state = book.end_phase()
    return state


def test_whole_five_round_game_recorded_undone_exported_and_resumed(tmp_path):
    path = tmp_path / "game.sqlite"
    book = GameBook(path)
    book.new_game([{"id": "orcs", "initiative": 1}, {"id": "empire", "initiative": 2}], name="intro")
    states = []
    for r in range(1, 6):
        states.append(play_round(book, r))
        s = states[-1]
        # End phase: every token gone but wounds (RB p.10).
        assert all(d["activation"] == 0 and d["damage"] == 0 and d["power"] == 0 for d in s["disks"])
        assert s["round"] == r and s["phase"] == "end"
    final = states[-1]
    assert final["game_over"]
    assert [len(final["casualty_piles"][p]) for p in ("orcs", "empire")] == [0, 5]
    assert {p["id"]: p["victory_points"] for p in final["players"]} == {"orcs": 5, "empire": 0}
    assert final["leader"] == "orcs"

    # Undo the last 3 changes (end phase, melee, phase) of round 5, then redo them differently.
    after_undo = book.undo(3)
    assert after_undo["round"] == 5 and after_undo["phase"] == "activation"
    assert len(after_undo["casualty_piles"]["empire"]) == 4
    assert {p["id"]: p["victory_points"] for p in after_undo["players"]} == {"orcs": 4, "empire": 0}
    book.set_phase(5, "melee")
    book.add_casualty("orc")  # say the orc fell to something else
    state = book.end_phase()
    assert {p["id"]: p["victory_points"] for p in state["players"]} == {"orcs": 4, "empire": 1}

    # The raw log keeps the undone events, marked by undo events (append-only).
    kinds = [e["kind"] for e in book.events()]
    assert kinds.count("undo") == 3

    exported = book.export_game()
    book.close()
    text = json.dumps(exported)
    # Resume from the file: the same state.
    with GameBook(path) as again:
        assert again.state() == state
    # Import into a fresh book: the same game, minus the undo history.
    with GameBook(tmp_path / "other.sqlite") as other:
        imported = other.import_game(json.loads(text))
        for k in ("round", "phase", "players", "disks", "casualty_piles", "leader", "objective"):
            assert imported[k] == state[k], k
        assert other.undo(1)["started"] is False  # the import is one undoable change


def test_fold_is_the_same_state_as_the_store(tmp_path):
    with GameBook(tmp_path / "g.sqlite") as book:
        book.new_game(["a", "b", "c"])
        book.set_initiative(["c", "a", "b"])
        book.set_tokens("x", player="b", wound=1, damage=3)
        state = book.state()
        export = book.export_game()
    folded = fold_events((e["kind"], e["data"]) for e in export["events"])
    assert [p["id"] for p in state["players"]] == ["c", "a", "b"]
    assert folded["disks"]["x"]["wound"] == 1


def test_scenario_objective_and_awards(tmp_path):
    with GameBook(tmp_path / "g.sqlite") as book:
        book.new_game(["orcs", "empire"], objective={"kind": "scenario", "name": "Generalicidio",
                                                      "text": "5 VP per enemy hero casualty"})
        book.add_casualty("hero1", player="empire", unit="karl-franz")
        state = book.award_vp("orcs", 5, "enemy hero casualty (Generalicidio)")
        assert {p["id"]: p["victory_points"] for p in state["players"]} == {"orcs": 5, "empire": 0}
        state = book.set_objective({"kind": "scenario", "name": "per casualty", "vp_per_enemy_casualty": 2})
        assert {p["id"]: p["victory_points"] for p in state["players"]} == {"orcs": 7, "empire": 0}
        # ties go by initiative
        state = book.award_vp("empire", 7, "correction")
        assert state["leader"] == "orcs"


@pytest.mark.parametrize("change, data, message", [
    ("set_phase", {"round": 6, "phase": "melee"}, "round: must be 1..5"),
    ("set_phase", {"round": 2, "phase": "lunch"}, "phase"),
    ("set_tokens", {"disk": "new"}, "say its player"),
    ("set_tokens", {"disk": "a", "player": "elves"}, "unknown player 'elves'"),
    ("set_tokens", {"disk": "a", "player": "orcs", "power": 2}, "power: must be 0..1"),
    ("set_tokens", {"disk": "a", "player": "orcs", "damage": -1}, "damage: must be"),
    ("set_tokens", {"disk": "a", "player": "orcs", "gold": 1}, "unknown field"),
    ("set_initiative", {"order": ["orcs"]}, "every player exactly once"),
    ("award_vp", {"player": "orcs", "points": "many"}, "points"),
    ("record_melee", {"melee": {"format": "tablesight.report/1"}}, "tablesight.melee"),
    ("restore_disk", {"disk": "zz"}, "not in a casualty pile"),
    ("frobnicate", {}, "unknown change"),
])
def test_bad_changes_are_refused_and_change_nothing(tmp_path, change, data, message):
    with GameBook(tmp_path / "g.sqlite") as book:
        book.new_game(["orcs", "empire"])
        before = book.events()
        with pytest.raises(BookError, match=message):
            book.change(change, data)
        assert book.events() == before


def test_changes_before_a_game_and_too_many_undos_are_refused(tmp_path):
    with GameBook(tmp_path / "g.sqlite") as book:
        with pytest.raises(BookError, match="no game yet"):
            book.set_phase(1, "melee")
        book.new_game(["orcs", "empire"])
        with pytest.raises(BookError, match="only 1 change"):
            book.undo(2)


def test_casualty_and_restore(tmp_path):
    with GameBook(tmp_path / "g.sqlite") as book:
        book.new_game(["orcs", "empire"])
        book.set_tokens("a", player="orcs", wound=1, damage=2)
        book.add_casualty("a")
        with pytest.raises(BookError, match="casualty pile"):
            book.set_tokens("a", damage=1)
        state = book.restore_disk("a")
        assert state["disks"] == [{"disk": "a", "player": "orcs", "unit": None, "activation": 0, "damage": 0,
                                   "wound": 1, "power": 0}]


# Files that are not a game book --------------------------------------------------------------------------------


def _foreign_sqlite(path):
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO photos (name) VALUES ('holiday')")
    conn.commit()
    conn.close()


def _corrupt_book(path):
    with GameBook(path) as book:
        book.new_game(["orcs", "empire"])
        for i in range(200):
            book.set_tokens(f"d{i}", player="orcs", damage=1)
    # checkpoint is done on close; now scribble over the middle of the file
    data = bytearray(path.read_bytes())
    for i in range(4096, min(len(data), 4096 * 4)):
        data[i] = 0xA5
    path.write_bytes(bytes(data))


def _newer_schema(path):
    with GameBook(path) as book:
        book.new_game(["orcs", "empire"])
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version=99")
    conn.commit()
    conn.close()


def _bad_event(path):
    with GameBook(path) as book:
        book.new_game(["orcs", "empire"])
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO events (at, kind, data) VALUES ('now', 'set_phase', '{\"round\": 9}')")
    conn.commit()
    conn.close()


@pytest.mark.parametrize("make, message", [
    (lambda p: p.write_text("players: orcs, empire\n"), "not an SQLite database"),
    (lambda p: p.write_bytes(b"SQLite format 3\x00" + b"\x00" * 50), "another program|cannot be read|damaged"),
    (_foreign_sqlite, "another program"),
    (_corrupt_book, "damaged|cannot be read"),
    (_newer_schema, "newer tablesight"),
    (_bad_event, "round: must be 1..5"),
], ids=["text file", "truncated sqlite", "foreign sqlite", "corrupt book", "newer schema", "bad event"])
def test_foreign_or_corrupt_files_are_refused_and_left_untouched(tmp_path, make, message):
    path = tmp_path / "book.sqlite"
    make(path)
    before = path.read_bytes()
    with pytest.raises(BookError, match=message):
        GameBook(path)
    assert path.read_bytes() == before
    assert not (tmp_path / "book.sqlite-wal").exists() or make is _bad_event


def test_empty_file_becomes_a_new_book(tmp_path):
    path = tmp_path / "book.sqlite"
    path.write_bytes(b"")
    with GameBook(path) as book:
        assert book.state()["started"] is False
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_two_books_on_one_file_see_each_others_changes(tmp_path):
    path = tmp_path / "g.sqlite"
    with GameBook(path) as one, GameBook(path) as two:
        one.new_game(["orcs", "empire"])
        two.set_tokens("a", player="orcs", damage=1)
        one.set_tokens("a", damage=2)  # validated against the latest log, which includes two's change
        assert two.state()["disks"][0]["damage"] == 2
        assert two.undo(1)["disks"][0]["damage"] == 1
        assert one.state()["disks"][0]["damage"] == 1


def test_state_kept_after_each_change_equals_a_full_replay(tmp_path):
    """The book advances its state event by event; reopening replays the whole log: both must agree."""
    from book_game_script import game_script
    path = tmp_path / "g.sqlite"
    with GameBook(path) as book:
        for kind, data in game_script():
            live = book.change(kind, data)
        book.undo(2)
        live = book.state()
    with GameBook(path) as again:
        assert again.state() == live
