"""Warhammer: Diskwars rules (see spec/diskwars-rules.md; page numbers cite the rulebook, RB p.N)."""
