"""A real HTTP server around the book's blueprint, for the kill-safety test: prints its port, then serves."""

import sys

from flask import Flask
from werkzeug.serving import make_server

from webui.book import GameBook
from webui.book_api import blueprint

app = Flask("book_server_proc")
app.extensions["tablesight.book"] = GameBook(sys.argv[1])
app.register_blueprint(blueprint)
server = make_server("127.0.0.1", 0, app, threaded=True)
print(server.server_port, flush=True)
server.serve_forever()
