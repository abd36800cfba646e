-- lakeport: offline — it drops token_failures, which an earlier server writes on every failed client authentication
-- Failed-attempt throttling by client AND source address (docs/auth.md, "Rate limit"); replaces
-- token_failures, which counted per client_id only and so let anyone lock a client out.
--   kind 'client': subject = the client_id tried (or '#' + its SHA-256 when it is not a well-formed
--                  identity); source = the source address (IPv4, or the IPv6 /64) or '*' for the
--                  client_id's total over every source.
--   kind 'admin':  subject = ''; source = the source address. Counts bad x-admin-token headers.
-- failures count in a fixed window starting at window_start. last_success_at (client rows only) is
-- when that source last authenticated successfully as that client, refreshed at most once a day.
CREATE TABLE auth_failures (
  kind            text NOT NULL,
  subject         text NOT NULL,
  source          text NOT NULL,
  window_start    timestamptz NOT NULL,
  failures        integer NOT NULL DEFAULT 0,
  last_success_at timestamptz,
  PRIMARY KEY (kind, subject, source)
);
CREATE INDEX auth_failures_window_start ON auth_failures (window_start);

DROP TABLE token_failures;
