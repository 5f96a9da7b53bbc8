"""The core below every feature and below the database: settings, errors, bounded HTTP, child
processes, the one definition of each measured figure and of cost, safe text and figures,
stored summaries. It imports no feature and no stored run (services.runstate does)."""
