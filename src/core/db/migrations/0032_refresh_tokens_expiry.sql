-- Refresh-token rows past their expiry are deleted (AuthRepo.purgeExpiredRefreshTokens): an expired
-- token is refused by its own expiry whether or not its row is there. Interactive sessions add a row
-- at every refresh, so without this the table only grows.
CREATE INDEX refresh_tokens_expires_at ON refresh_tokens (expires_at);
