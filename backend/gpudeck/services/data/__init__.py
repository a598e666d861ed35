"""The data directory's datasets (uploads, their header checks) and what a form field may pick
from it."""
