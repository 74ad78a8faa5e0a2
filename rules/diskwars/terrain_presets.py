"""The rulebook's terrain pieces by name: which keywords each has, checked at the source.

The core box has five double-sided terrain pieces (RB p.3: "5 piezas de terreno de doble cara", "5 cartas de
terreno"); a piece's keywords are printed on its card (RB p.13: "Todas las piezas de Terreno tienen palabras
clave"). The Spanish rulebook names ten faces. Only where its text states a face's keywords does the companion
apply them; elsewhere it asks the players to pick them from the card rather than guess:

| face (es / en) | keywords | where the rulebook says so |
| --- | --- | --- |
| Rocas / Rocks | cover, fortified | RB p.13, the terrain card shown ("•Cobertura •Fortificado") |
| Barranco / Ravine | rough, dangerous (physical) | RB p.13, the same card's other face ("•Escabroso •Peligroso (√)") |
| Colina / Hill | blocks_los, defensive, rough, elevated | RB p.3, the card pictured ("•Bloquea la visión •Defensivo" and, in its second column, "•Escabroso •Terreno elevado"); the p.14 map has one piece with exactly these four |
| Lago / Lake | rough; no deploying on it without Flying or Stride | RB p.3 ("•Escabroso Los discos que no tengan Volador ni Zancada no se pueden desplegar pisando este terreno") |
| Bosque pequeño, Bosque grande / Small and Large Forest; Pantano / Marsh; Molino derruido / Ruined Mill; Atalaya / Watchtower; Cueva / Cave | not stated in readable text | RB p.14 shows them on a map whose text is scrambled in the source (the keyword lists cannot be matched to names); p.22 gives only the Cave's and the Mill's special rules |

Other names (a house rule's "forest", "wall", ...) are not the rulebook's: the players pick the keywords.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TerrainPreset:
    key: str
    name_es: str
    name_en: str
    keywords: tuple[str, ...] | None  # None: the rulebook does not state them readably: ask the players
    source: str
    rules: tuple[str, ...] = ()  # the piece's own special rules, as the rulebook gives them
    no_deploy_unless: tuple[str, ...] = ()  # disks may not be deployed on it without one of these keywords

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "name_es": self.name_es, "name_en": self.name_en,
                "keywords": None if self.keywords is None else list(self.keywords), "source": self.source,
                "rules": list(self.rules), "no_deploy_unless": list(self.no_deploy_unless)}


PRESETS: tuple[TerrainPreset, ...] = (
    TerrainPreset("rocas", "Rocas", "Rocks", ("cover", "fortified"), "RB p.13 (terrain card)"),
    TerrainPreset("barranco", "Barranco", "Ravine", ("rough", "dangerous"), "RB p.13 (terrain card)",
                  ("Dangerous deals physical damage (√).",)),
    TerrainPreset("colina", "Colina", "Hill", ("blocks_los", "defensive", "rough", "elevated"),
                  "RB p.3 (terrain card; the p.14 map agrees)"),
    TerrainPreset("lago", "Lago", "Lake", ("rough",), "RB p.3 (terrain card)",
                  ("Disks without Flying or Stride cannot be deployed overlapping it.",), ("flying", "stride")),
    TerrainPreset("bosque-pequeno", "Bosque pequeño", "Small Forest", None, "RB p.14 (named; keywords unreadable)"),
    TerrainPreset("bosque-grande", "Bosque grande", "Large Forest", None, "RB p.14 (named; keywords unreadable)"),
    TerrainPreset("pantano", "Pantano", "Marsh", None, "RB p.14 (named; keywords unreadable)"),
    TerrainPreset("molino-derruido", "Molino derruido", "Ruined Mill", None, "RB p.14, 22",
                  ("A disk brought in as a reinforcement through the Mill's ability need only overlap it, not lie "
                   "wholly inside it (RB p.22).",)),
    TerrainPreset("atalaya", "Atalaya", "Watchtower", None, "RB p.3, 14, 15 (Fortresses scenario)",
                  ("Fortresses (special scenario): a player who controls a Watchtower may activate it as a disk for "
                   "a ranged attack 'ß: Asedio ¡¡¡ 3 √'; controlling more than one at the end of a round wins "
                   "(RB p.3, 15).",)),
    TerrainPreset("cueva", "Cueva", "Cave", None, "RB p.14, 22",
                  ("Deviation results may go to disks overlapping the Cave even when the target does not overlap "
                   "it (RB p.22).",)),
)


def normalised_name(name: str) -> str:
    """A piece's name as the presets are looked up by: ASCII, lower case, words separated by single spaces."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]+", " ", ascii_name.lower()).strip()


_BY_NAME: dict[str, TerrainPreset] = {}
for _p in PRESETS:
    for _n in (_p.key.replace("-", " "), _p.name_es, _p.name_en):
        _BY_NAME[normalised_name(_n)] = _p

def preset_for(name: str) -> TerrainPreset | None:
    """The rulebook face a piece's name names (Spanish or English, any case and accents), or None."""
    if not isinstance(name, str):
        return None
    return _BY_NAME.get(normalised_name(name))


def keywords_for_name(name: str) -> tuple[str, ...] | None:
    """The keywords the rulebook states for the face a name names; None when it states none readably or the
    name is not a rulebook piece: the players pick the keywords from the card."""
    p = preset_for(name)
    return None if p is None else p.keywords


def presets_json() -> list[dict[str, Any]]:
    return [p.to_json() for p in PRESETS]
