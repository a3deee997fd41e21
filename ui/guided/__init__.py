"""The guided lessons' room: lessons of steps that ask before they show, on live figures."""
