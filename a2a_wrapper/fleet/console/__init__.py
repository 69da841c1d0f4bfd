"""The registry's web console at /console: every agent, its live tasks, the approvals waiting (answered here as
allow once / allow for this context / deny) and the audit, for operators who signed in (or, with no operators
configured, for whoever is on the registry's own machine).

access (who may ask) · operators (keys and sessions) · agent_api (the calls to each agent's operator endpoint) ·
hub (every agent's state, live) · routes · page (the HTML) · headers (the security headers) · static/ (the page's
files: no build step, nothing fetched from elsewhere)."""
