"""Votes of a room: who a voter is (a hashed identity), the live tally of one exchange, and the
Bradley-Terry ranking of engines from every vote. Casting and withdrawing a vote is
services/playground/votes.py."""
