"""The web companion: Flask app factory, JSON API, the live table page, the game book store."""
