"""Research campaigns that use fpemu but are not part of it: run from the repository root
(``python -m research.<campaign>``); nothing here is installed with the package, and fpemu
never imports it."""
