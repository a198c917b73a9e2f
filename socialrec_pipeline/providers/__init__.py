"""One module per external API: a small client with timeouts and the generator built on it."""
