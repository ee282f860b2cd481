"""Where the database is, how to reach it, and how its schema is kept current."""
