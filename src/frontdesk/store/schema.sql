-- migration 1: jobs, attempts, the event journal
CREATE TABLE jobs (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    name            TEXT,
    spec            TEXT NOT NULL,            -- the validated JobSpec as JSON
    context         TEXT NOT NULL DEFAULT '{}', -- the submit context (cwd, harness, a few env vars)
    state           TEXT NOT NULL,            -- JobState
    reason          TEXT,                     -- why pending / how it ended
    backend         TEXT NOT NULL,
    backend_id      TEXT,                     -- the current attempt's id on the backend
    attempt         INTEGER NOT NULL DEFAULT 1,
    submitting      INTEGER NOT NULL DEFAULT 0, -- 1 between handing to the backend and recording its id
    principal       TEXT NOT NULL,            -- the Unix user (or token principal)
    session         TEXT,                     -- the agent session to notify
    job_class       TEXT,                     -- policy's class (hpc/training/inference/agent)
    class_reason    TEXT,
    partition       TEXT,
    priority        INTEGER NOT NULL DEFAULT 0,
    idempotency_key TEXT UNIQUE,
    exit_code       INTEGER,
    signal          INTEGER,
    submitted_at    REAL NOT NULL,
    eligible_at     REAL,                     -- when dependencies were satisfied / retry backoff ends
    started_at      REAL,
    ended_at        REAL,
    usage           TEXT,                     -- Usage as JSON
    stdout_path     TEXT,
    stderr_path     TEXT,
    report          TEXT                      -- the Report as JSON, built once when the job ends
);
CREATE INDEX jobs_state ON jobs(state);
CREATE INDEX jobs_name ON jobs(name);
CREATE INDEX jobs_session ON jobs(session);

CREATE TABLE attempts (
    job_id      INTEGER NOT NULL REFERENCES jobs(id),
    attempt     INTEGER NOT NULL,
    backend_id  TEXT,
    state       TEXT NOT NULL,
    exit_code   INTEGER,
    started_at  REAL,
    ended_at    REAL,
    PRIMARY KEY (job_id, attempt)
);

CREATE TABLE events (
    seq     INTEGER PRIMARY KEY AUTOINCREMENT,
    ts      REAL NOT NULL,
    kind    TEXT NOT NULL,
    job_id  INTEGER,
    session TEXT,
    principal TEXT,
    data    TEXT NOT NULL
);
CREATE INDEX events_job ON events(job_id);

-- migration 2: the QOS a policy chose (reaches Slurm as --qos)
ALTER TABLE jobs ADD COLUMN qos TEXT;
