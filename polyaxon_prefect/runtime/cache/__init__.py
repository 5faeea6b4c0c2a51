"""The op cache: keys that see params and code, and reuse of succeeded runs."""
