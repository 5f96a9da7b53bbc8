"""The team server: who is signed in and what they may do (access), login throttling, and
the limits a shared server keeps on runs and requests."""
