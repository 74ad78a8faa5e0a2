"""A real HTTP server around the book's blueprint, for the kill-safety test: prints its port, then serves.

It is the server `tablesight serve` uses (waitress, through `webui.server.create_server`)."""

import sys

from flask import Flask

from webui.book import GameBook
from webui.book_api import blueprint
from webui.server import create_server

app = Flask("book_server_proc")
app.extensions["tablesight.book"] = GameBook(sys.argv[1])
app.register_blueprint(blueprint)
server = create_server(app, "127.0.0.1", 0)
print(server.effective_port, flush=True)
server.run()
