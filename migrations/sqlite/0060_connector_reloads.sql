-- How many times the connectors were reloaded, by any process: every
-- process reads its own connectors directory again when this moves, so a
-- reload asked of one reaches all, whether or not they share a disk.
CREATE TABLE connector_reloads (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    generation BIGINT NOT NULL,
    reloaded_at BIGINT NOT NULL,
    reloaded_by TEXT NOT NULL
);
INSERT INTO connector_reloads (id, generation, reloaded_at, reloaded_by) VALUES (1, 0, 0, '');
