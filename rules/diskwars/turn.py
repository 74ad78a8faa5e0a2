"""The round of Diskwars: who may activate, the command cards' order, the end phase and the game's end (pure).

RB p.7: a round is an activation phase, a melee phase and an end phase. In the activation phase the players
reveal command cards and resolve them in strategy order (Bold before Direct, Direct before Cunning, Cunning before
Bold; Slow last; RB p.7, p.15 for more than two players, p.18 for loops and a first player without cards). A disk
with an activation token is activated; a pinned disk cannot be activated (RB p.8). The activation phase ends when
every disk on the battlefield is activated or pinned, or nobody has a card left (RB p.7). The end phase removes
every token but wounds (RB p.10). After round 5, every disk still in a reserve goes to its owner's casualty pile,
the victory points are counted and ties go by initiative order (RB p.11, 15); a player with no disk on the
battlefield is eliminated at once, and the last player left wins (RB p.11, 20).

Inputs are the Scene, its Report and small dataclasses of what the game book knows (`BookSeat`, `CommandCard`);
nothing here reads files or keeps state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from tablesight.errors import InputError
from tablesight.scene import Scene

from rules.report import Report

ROUNDS = 5  # RB p.11: "Una partida dura 5 rondas"
PHASES = ("activation", "melee", "end")  # RB p.7
STRATEGIES = ("bold", "direct", "cunning", "slow")  # RB p.7: Audaz, Directa, Astuta, Lenta
# RB p.7: "Las estrategias Audaces se resuelven antes que las Directas, las estrategias Directas van antes que las
# Astutas; y las estrategias Astutas tienen preferencia sobre las Audaces. Las estrategias Lentas ... en último
# lugar." Key resolves before value.
RESOLVES_BEFORE = {"bold": "direct", "direct": "cunning", "cunning": "bold"}
# RB p.10: "los jugadores retiran todas las fichas que haya sobre sus discos (a excepción de las fichas de Herida)".
TOKENS_KEPT_AT_END_PHASE = ("wound",)
TOKENS_CLEARED_AT_END_PHASE = ("activation", "damage", "power")


class TurnError(InputError):
    """Bad input to the round's rules (an unknown strategy, a card of a player not in the game)."""


@dataclass(frozen=True)
class RoundSettings:
    """Readings of the round's rules (each in `rules.diskwars.settings.READINGS`, group "round").

    card_order_after_first:
        RB p.15: "comparar la estrategia de la carta del jugador inicial con la estrategia de las cartas de los
        demás jugadores, una por una"; ties by initiative order. The cards that resolve after the first player's
        are not compared with each other there. "strategy" (default): they keep the strategy order among
        themselves (RB p.7: Bold before Direct, ...), so with the first player Bold, another Bold card resolves
        before a Direct one; "initiative": they are all a tie, resolved in initiative order.
    """

    card_order_after_first: str = "strategy"

    def __post_init__(self) -> None:
        from rules.diskwars.settings import READING

        READING["card_order_after_first"].check(self.card_order_after_first)


@dataclass(frozen=True)
class BookSeat:
    """A player as the game book knows them: id and initiative (1 = the first player, RB p.12)."""

    id: str
    initiative: int


@dataclass(frozen=True)
class CommandCard:
    """A revealed command card: whose it is and its strategy (`STRATEGIES`); `name` is free text ("Asalto")."""

    player: str
    strategy: str
    name: str = ""

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise TurnError(f"cards[{self.player}].strategy: one of {', '.join(STRATEGIES)}, got {self.strategy!r}")

    def to_json(self) -> dict[str, Any]:
        return {"player": self.player, "strategy": self.strategy, "name": self.name}


def _seats_in_order(seats: Sequence[BookSeat]) -> list[BookSeat]:
    return sorted(seats, key=lambda s: s.initiative)


def command_order(cards: Iterable[CommandCard], seats: Sequence[BookSeat],
                  settings: RoundSettings | None = None) -> tuple[str, ...]:
    """The players whose revealed cards resolve, in resolution order.

    RB p.15: every card is compared with the first player's card: those that beat it resolve before it, the
    others after (RB p.7: on equal strategies the first player resolves first). Cards after the first player's
    keep the strategy order among themselves (the first player's strategy before the one it beats). RB p.18:
    when the first player played no card, the next player in initiative order who did takes that place. RB p.15:
    when that card is Slow, the other cards are compared with each other; RB p.18: three different non-Slow
    strategies among them are a loop, read as a tie. Slow cards always come last. Ties go by initiative order
    (RB p.7, 15). How the cards after the first player's compare: `settings.card_order_after_first`."""
    settings = settings or RoundSettings()
    cards = list(cards)
    rank = {s.id: s.initiative for s in seats}
    seen: set[str] = set()
    for c in cards:
        if c.player not in rank:
            raise TurnError(f"cards: {c.player!r} is not a player of this game (players: {sorted(rank)})")
        if c.player in seen:
            raise TurnError(f"cards: {c.player!r} revealed two cards at once")
        seen.add(c.player)
    if not cards:
        return ()
    cards.sort(key=lambda c: rank[c.player])
    reference = cards[0]  # the first player in initiative order who revealed a card (RB p.18)
    fast = [c for c in cards if c.strategy != "slow"]
    slow = [c for c in cards if c.strategy == "slow"]
    if reference.strategy != "slow":
        ref = reference.strategy

        def group(c: CommandCard) -> int:
            if RESOLVES_BEFORE[c.strategy] == ref:
                return 0  # beats the first player's card
            if c is reference:
                return 1
            if settings.card_order_after_first == "initiative":
                return 2  # after the first player's card, all a tie
            return 2 if c.strategy == ref else 3  # equal strategy before the one the first player's card beats

        fast.sort(key=lambda c: (group(c), rank[c.player]))
    else:
        kinds = {c.strategy for c in fast}
        if len(kinds) == 2:
            a, b = sorted(kinds)
            first = a if RESOLVES_BEFORE[a] == b else b
            fast.sort(key=lambda c: (c.strategy != first, rank[c.player]))
        else:  # one strategy (a tie) or all three (a loop, RB p.18): initiative order
            fast.sort(key=lambda c: rank[c.player])
    return tuple(c.player for c in fast + slow)


@dataclass(frozen=True)
class DiskActivation:
    """Whether one disk on the battlefield may be activated now, and why not (RB p.8)."""

    disk: str
    player: str | None
    activated: bool
    pinned_by: tuple[str, ...]
    may_activate: bool
    why_not: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"disk": self.disk, "player": self.player, "activated": self.activated,
                "pinned_by": list(self.pinned_by), "may_activate": self.may_activate, "why_not": list(self.why_not)}


def activation_status(scene: Scene, report: Report, activated: Iterable[str] = ()) -> tuple[DiskActivation, ...]:
    """Every disk on the battlefield: activated (an activation token in the scene or in `activated`, the game
    book's), pinned (by ANY disk, an ally's too: RB p.8 "que no esté trabado"), and so whether it may activate.
    Disks wholly outside the battlefield are not on it (RB p.20) and are left out."""
    booked = set(activated)
    gone = {o.disk for o in report.off_battlefield if o.wholly}
    pinners: dict[str, list[str]] = {}
    for p in report.pins:
        pinners.setdefault(p.pinned, []).append(p.pinner)
    out = []
    for d in sorted(scene.disks, key=lambda d: d.id):
        if d.id in gone:
            continue
        is_activated = d.id in booked or (d.tokens is not None and d.tokens.activation > 0)
        by = tuple(sorted(pinners.get(d.id, ())))
        why = []
        if is_activated:
            why.append("already activated: it carries an activation token (RB p.8)")
        if by:
            why.append(f"pinned by {', '.join(by)}: a pinned disk cannot be activated (RB p.8)")
        out.append(DiskActivation(d.id, d.player, is_activated, by, not why, tuple(why)))
    return tuple(out)


def activation_phase_over(status: Iterable[DiskActivation]) -> bool:
    """RB p.7: the activation phase ends when every disk on the battlefield is activated or pinned (or nobody has
    a command card left, which the players say)."""
    return not any(s.may_activate for s in status)


def players_without_disks(scene: Scene, report: Report, seats: Sequence[BookSeat]) -> tuple[str, ...]:
    """Players with no disk on the battlefield: eliminated at once (RB p.11, 20).

    Judged only when it is certain: a disk of unknown owner could be anyone's, so while one is on the battlefield
    nobody is called eliminated; an empty battlefield (before deployment) eliminates nobody either."""
    gone = {o.disk for o in report.off_battlefield if o.wholly}
    on = [d for d in scene.disks if d.id not in gone]
    if not on or any(d.player is None for d in on):
        return ()
    owners = {d.player for d in on}
    return tuple(s.id for s in _seats_in_order(seats) if s.id not in owners)


@dataclass(frozen=True)
class Standing:
    player: str
    initiative: int
    victory_points: int
    eliminated: bool

    def to_json(self) -> dict[str, Any]:
        return {"player": self.player, "initiative": self.initiative, "victory_points": self.victory_points,
                "eliminated": self.eliminated}


@dataclass(frozen=True)
class GameEnd:
    """The game's end: `over`, `why` ("round_5" or "eliminated"), the winner and the standings (best first)."""

    over: bool
    why: str | None
    winner: str | None
    standings: tuple[Standing, ...]

    def to_json(self) -> dict[str, Any]:
        return {"game_over": self.over, "why": self.why, "winner": self.winner,
                "standings": [s.to_json() for s in self.standings]}


def game_end(round: int, phase: str | None, end_phase_done: bool, seats: Sequence[BookSeat],
             victory_points: Mapping[str, int], eliminated: Iterable[str] = ()) -> GameEnd:
    """Whether the game is over and who wins.

    RB p.11: the game lasts 5 rounds; after the end phase of round 5 the player with most victory points wins,
    ties by initiative order (RB p.15 example). RB p.11: a player with no disk on the battlefield is eliminated at
    once; when all players but one are eliminated, the one left wins. Eliminated players never win on points."""
    out = set(eliminated)
    standings = tuple(sorted((Standing(s.id, s.initiative, int(victory_points.get(s.id, 0)), s.id in out)
                              for s in seats), key=lambda s: (s.eliminated, -s.victory_points, s.initiative)))
    left = [s for s in standings if not s.eliminated]
    if len(seats) > 1 and len(left) <= 1:
        return GameEnd(True, "eliminated", left[0].player if left else None, standings)
    if round >= ROUNDS and phase == "end" and end_phase_done:
        return GameEnd(True, "round_5", left[0].player if left else None, standings)
    return GameEnd(False, None, None, standings)


def victory_points(seats: Sequence[BookSeat], piles: Mapping[str, Sequence[Any]], per_enemy_casualty: int,
                   awards: Iterable[tuple[str, int]] = ()) -> dict[str, int]:
    """Victory points: `per_enemy_casualty` for every disk in another player's casualty pile (the introductory
    objective gives 1, RB p.11; a scenario card says its own) plus points the players awarded by hand."""
    vp = {s.id: 0 for s in seats}
    for owner, pile in piles.items():
        for p in vp:
            if p != owner:
                vp[p] += per_enemy_casualty * len(pile)
    for player, points in awards:
        vp[player] = vp.get(player, 0) + points
    return vp


__all__ = ["ROUNDS", "PHASES", "STRATEGIES", "RESOLVES_BEFORE", "TOKENS_KEPT_AT_END_PHASE",
           "TOKENS_CLEARED_AT_END_PHASE", "TurnError", "RoundSettings", "BookSeat", "CommandCard", "command_order",
           "DiskActivation", "activation_status", "activation_phase_over", "players_without_disks", "Standing",
           "GameEnd", "game_end", "victory_points"]
