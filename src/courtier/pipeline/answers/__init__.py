"""What an answer means: the guarded fetch, the verdict, the feedback rules and their
writer, robots.txt fetches."""
