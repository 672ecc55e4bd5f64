"""The dashboard's web server: the one room of `workbench.ui` that holds Tornado.

`dashboard` serves the `WorkbenchApp` (`workbench dashboard`) behind `access` (its token,
signed cookie and sessions, Host and Origin checks), with `downloads` (a bundle's tables as
files) and `offline` (Panel's stylesheets from the server's own route); `proxy` is the
JupyterLab Launcher tile that starts it on a Unix socket. The room imports the components;
no component imports the room or Tornado (import-linter's contracts in pyproject.toml). This
face imports nothing: `workbench dashboard` loads `access` and `offline` before Panel.
"""
