"""The operator endpoint (/operator/v1): the fleet's console reads an agent's live turns and waiting approvals
and answers them, with a key of its own, outside the A2A callers' guards."""
