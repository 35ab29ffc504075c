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

-- migration 3: typed control flags (a cancel request is no longer the reason text), a job's end made recoverable
-- (report_pending is set with the terminal state in one write and cleared with the report and its events), and
-- plug-in metadata stored with the job (JSON object: plug-in name -> its data) so a restart loses nothing
ALTER TABLE jobs ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN report_pending INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN plugin_meta TEXT NOT NULL DEFAULT '{}';
UPDATE jobs SET cancel_requested=1 WHERE reason='cancel requested';
UPDATE jobs SET report_pending=1 WHERE report IS NULL AND state IN ('COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT',
    'OUT_OF_MEMORY', 'NODE_FAIL', 'PREEMPTED', 'BOOT_FAIL', 'DEADLINE', 'DEPENDENCY_NEVER_SATISFIED');
CREATE INDEX jobs_report_pending ON jobs(report_pending) WHERE report_pending=1;

-- migration 4: job arrays. A task row names its array (the parent row, never handed to a backend) and its index;
-- the parent row holds the number of tasks.
ALTER TABLE jobs ADD COLUMN array_id INTEGER;
ALTER TABLE jobs ADD COLUMN array_index INTEGER;
ALTER TABLE jobs ADD COLUMN array_size INTEGER;
CREATE INDEX jobs_array ON jobs(array_id, array_index) WHERE array_id IS NOT NULL;

-- migration 5: dependents indexed by their dependency, so a job's end reads only the jobs that wait on it (the tick
-- re-read every waiting job at every end: O(n) per end), kept by a trigger on every insert path (single, batch,
-- array tasks) and filled here for the rows already stored; and an index on backend ids (the push path of every
-- job end looked its attempt up with a scan of the whole jobs table, the cost growing with the run)
CREATE TABLE job_deps (
    dep_id  INTEGER NOT NULL,             -- the job depended on
    job_id  INTEGER NOT NULL,             -- the dependent
    PRIMARY KEY (dep_id, job_id)
) WITHOUT ROWID;
INSERT OR IGNORE INTO job_deps (dep_id, job_id)
    SELECT CAST(d.value AS INTEGER), jobs.id FROM jobs, json_each(jobs.spec, '$.depends_on') AS d
    WHERE json_valid(jobs.spec);
CREATE TRIGGER jobs_deps AFTER INSERT ON jobs WHEN json_valid(NEW.spec) BEGIN
    INSERT OR IGNORE INTO job_deps (dep_id, job_id)
        SELECT CAST(value AS INTEGER), NEW.id FROM json_each(NEW.spec, '$.depends_on');
END;
CREATE INDEX jobs_backend_id ON jobs(backend_id) WHERE backend_id IS NOT NULL;

-- migration 6: the client's request id: a submission sent again after the gateway went away mid-request (killed
-- after storing the job, before answering) finds the job it made instead of making a second one
ALTER TABLE jobs ADD COLUMN request_id TEXT;
CREATE UNIQUE INDEX jobs_request ON jobs(principal, request_id) WHERE request_id IS NOT NULL;

-- migration 7: counters derived from the journal (/metrics) that outlive it: retention folds the tallied events it
-- deletes into this table in the same transaction (store/tallies.py), so the counters never drop after a prune
CREATE TABLE tallies (
    name    TEXT NOT NULL,                -- e.g. deliveries, guard_verdicts, memory_hits
    labels  TEXT NOT NULL,                -- the label values, a JSON list
    value   REAL NOT NULL,
    PRIMARY KEY (name, labels)
) WITHOUT ROWID;

-- migration 8: idempotency keys are each principal's own (stored as principal, U+001F, key: the column stays
-- UNIQUE): one user's key never finds, nor blocks, another user's job (record.scoped_key)
UPDATE jobs SET idempotency_key = principal || char(31) || idempotency_key WHERE idempotency_key IS NOT NULL;
