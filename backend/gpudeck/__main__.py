from gpudeck.cli import app

app()
