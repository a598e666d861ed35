"""Users, their API tokens and permissions, and the audit trail."""
