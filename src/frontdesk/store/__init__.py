"""SQLite state: jobs, the append-only event journal, and component schemas (sessions, memory, guard)."""
