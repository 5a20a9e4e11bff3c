"""Reading: files, stdin and .gz into numbered lines, unwrapped from journald, docker, kubectl and colour."""
