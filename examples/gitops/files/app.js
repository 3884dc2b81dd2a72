console.log("hello from the app bundle");
