"""OpenPAI clusters through their REST server: clusters file, REST client, job states, the backend."""
