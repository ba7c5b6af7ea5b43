"""Monitoring output: unified series per vendor (sources), recording rules, the dashboard and the
scrape objects, and the monitoring component that holds them."""
