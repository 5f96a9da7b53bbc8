"""The Runs page's views, drawn from services.runs.view: the history, one run, a comparison.
Split from app_pages/runs.py (the page's router) so each part reads in one sitting."""
