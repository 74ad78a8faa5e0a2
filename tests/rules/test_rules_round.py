"""The round: command-card order, who may activate, the end phase and the game's end (each test names its page)."""

import pytest
from rules_scenes import disk, scene

from rules.diskwars.report import build_report
from rules.diskwars.turn import (TOKENS_CLEARED_AT_END_PHASE, TOKENS_KEPT_AT_END_PHASE, BookSeat, CommandCard,
                                 TurnError, activation_phase_over, activation_status, command_order, game_end,
                                 players_without_disks, victory_points)

TWO = [BookSeat("jon", 1), BookSeat("kelly", 2)]
THREE = [BookSeat("frank", 1), BookSeat("jill", 2), BookSeat("matt", 3)]
FOUR = [BookSeat("a", 1), BookSeat("b", 2), BookSeat("c", 3), BookSeat("d", 4)]


def cards(**by_player):
    return [CommandCard(p, s) for p, s in by_player.items()]


def test_rb_p7_cunning_resolves_before_bold():
    # RB p.7 example: Jon reveals "Asalto" (Bold), Kelly "Acorralar" (Cunning): Kelly resolves first.
    assert command_order(cards(jon="bold", kelly="cunning"), TWO) == ("kelly", "jon")


@pytest.mark.parametrize("first,second,order", [
    ("bold", "direct", ("jon", "kelly")),  # RB p.7: Bold before Direct
    ("direct", "cunning", ("jon", "kelly")),  # Direct before Cunning
    ("direct", "bold", ("kelly", "jon")),
    ("slow", "cunning", ("kelly", "jon")),  # Slow last
    ("cunning", "slow", ("jon", "kelly")),
])
def test_rb_p7_strategy_order_for_two_players(first, second, order):
    assert command_order(cards(jon=first, kelly=second), TWO) == order


def test_rb_p7_same_strategy_first_player_resolves_first():
    # RB p.7: "Si los jugadores muestran cartas con la misma estrategia, el jugador inicial resuelve la suya en
    # primer lugar."
    assert command_order(cards(kelly="direct", jon="direct"), TWO) == ("jon", "kelly")
    assert command_order(cards(kelly="slow", jon="slow"), TWO) == ("jon", "kelly")


def test_rb_p15_three_players_compare_with_the_first_players_card():
    # RB p.15 example: Frank (first player) Bold, Jill Cunning, Matt Direct -> Jill, Frank, Matt.
    assert command_order(cards(frank="bold", jill="cunning", matt="direct"), THREE) == ("jill", "frank", "matt")


def test_rb_p15_first_player_slow_the_others_compare_with_each_other():
    # RB p.15: the first player's Slow card stays last; the others are compared with each other.
    assert command_order(cards(frank="slow", jill="bold", matt="cunning"), THREE) == ("matt", "jill", "frank")
    assert command_order(cards(frank="slow", jill="direct", matt="bold"), THREE) == ("matt", "jill", "frank")


def test_rb_p18_four_player_loop_is_a_tie_in_initiative_order():
    # RB p.18: three players reveal Bold, Cunning and Direct when the first player chose Slow: a loop, read as a
    # tie (initiative order), then the first player's Slow.
    assert command_order(cards(a="slow", b="cunning", c="direct", d="bold"), FOUR) == ("b", "c", "d", "a")


def test_rb_p18_first_player_without_cards_the_next_one_is_compared_with():
    # RB p.18: when the first player has no card left, the others compare with the next player (initiative order)
    # who played one. b (Direct) is that player: d (Bold) beats Direct, c (Cunning) is beaten.
    assert command_order(cards(b="direct", c="cunning", d="bold"), FOUR) == ("d", "b", "c")


def test_command_cards_bad_input_names_the_field():
    with pytest.raises(TurnError, match="strategy"):
        CommandCard("jon", "sneaky")
    with pytest.raises(TurnError, match="not a player"):
        command_order(cards(zed="bold"), TWO)
    with pytest.raises(TurnError, match="two cards"):
        command_order([CommandCard("jon", "bold"), CommandCard("jon", "slow")], TWO)
    assert command_order([], TWO) == ()


def test_rb_p8_pinned_by_an_ally_or_activated_cannot_activate():
    sc = scene([disk("a", 100, 100, player="orcs"), disk("ally", 110, 100, z=1, player="orcs"),
                disk("b", 400, 100, player="empire", tokens={"activation": 1}),
                disk("c", 400, 400, player="empire"), disk("d", 600, 600, player="orcs")])
    status = {s.disk: s for s in activation_status(sc, build_report(sc), activated={"d"})}
    assert not status["a"].may_activate and status["a"].pinned_by == ("ally",) and "pinned by ally" in \
        status["a"].why_not[0]
    assert status["ally"].may_activate
    assert not status["b"].may_activate and status["b"].activated  # the scene's token
    assert not status["d"].may_activate and "already activated" in status["d"].why_not[0]  # the book's token
    assert status["c"].may_activate
    assert not activation_phase_over(status.values())


def test_rb_p7_activation_phase_over_when_every_disk_is_activated_or_pinned():
    sc = scene([disk("a", 100, 100, player="orcs"), disk("e", 110, 100, z=1, player="empire"),
                disk("c", 400, 400, player="empire")])
    status = activation_status(sc, build_report(sc), activated={"e", "c"})
    assert activation_phase_over(status)


def test_rb_p20_disk_wholly_outside_the_battlefield_is_not_on_it():
    sc = scene([disk("a", 100, 100, player="orcs"), disk("gone", -200, 100, player="empire")])
    report = build_report(sc)
    assert [s.disk for s in activation_status(sc, report)] == ["a"]
    assert players_without_disks(sc, report, [BookSeat("orcs", 1), BookSeat("empire", 2)]) == ("empire",)


def test_rb_p11_no_elimination_while_an_owner_is_unknown_or_before_deployment():
    seats = [BookSeat("orcs", 1), BookSeat("empire", 2)]
    sc = scene([disk("a", 100, 100, player="orcs"), disk("b", 300, 300)])
    assert players_without_disks(sc, build_report(sc), seats) == ()
    empty = scene([])
    assert players_without_disks(empty, build_report(empty), seats) == ()


def test_rb_p10_end_phase_keeps_only_wounds():
    assert TOKENS_KEPT_AT_END_PHASE == ("wound",)
    assert set(TOKENS_CLEARED_AT_END_PHASE) == {"activation", "damage", "power"}


def test_rb_p11_introductory_victory_points_one_per_enemy_casualty():
    seats = [BookSeat("orcs", 1), BookSeat("empire", 2)]
    vp = victory_points(seats, {"orcs": ["x", "y"], "empire": ["z"]}, 1, awards=[("orcs", 2)])
    assert vp == {"orcs": 3, "empire": 2}


def test_rb_p15_tie_on_points_goes_by_initiative_after_round_5():
    # RB p.15 example: at the end of round 5 Buster and Lucille both have 10 points; initiative order decides.
    seats = [BookSeat("lucille", 2), BookSeat("buster", 1)]
    end = game_end(5, "end", True, seats, {"buster": 10, "lucille": 10})
    assert end.over and end.why == "round_5" and end.winner == "buster"
    assert not game_end(5, "melee", False, seats, {"buster": 10, "lucille": 10}).over
    assert not game_end(4, "end", True, seats, {"buster": 10, "lucille": 10}).over


def test_rb_p11_last_player_left_wins_at_once():
    seats = [BookSeat("a", 1), BookSeat("b", 2), BookSeat("c", 3)]
    end = game_end(2, "activation", False, seats, {"a": 5, "b": 0, "c": 1}, eliminated=["a", "b"])
    assert end.over and end.why == "eliminated" and end.winner == "c"
    assert not game_end(2, "activation", False, seats, {"a": 5}, eliminated=["a"]).over
    # An eliminated player never wins on points at the end of round 5.
    assert game_end(5, "end", True, seats, {"a": 9, "b": 1, "c": 0}, eliminated=["a"]).winner == "b"


def test_rb_p15_cards_after_the_first_players_card_reading_is_a_setting():
    # RB p.15 compares each card with the first player's only. Frank (first) Bold, Jill Direct, Matt Bold:
    # "strategy" keeps Bold before Direct after Frank; "initiative" takes them as tied.
    from rules.diskwars.settings import SettingsError, readings_json
    from rules.diskwars.turn import RoundSettings

    played = cards(frank="bold", jill="direct", matt="bold")
    assert command_order(played, THREE) == ("frank", "matt", "jill")
    assert command_order(played, THREE, RoundSettings("initiative")) == ("frank", "jill", "matt")
    # The RB p.15 example reads the same either way.
    example = cards(frank="bold", jill="cunning", matt="direct")
    assert command_order(example, THREE, RoundSettings("initiative")) == ("jill", "frank", "matt")
    with pytest.raises(SettingsError, match="card_order_after_first"):
        RoundSettings("alphabetical")
    (reading,) = readings_json(RoundSettings())
    assert reading["name"] == "card_order_after_first" and reading["source"] == "RB p.7, 15" and reading["is_default"]
